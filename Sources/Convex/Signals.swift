import Synchronization
import TimeSource

/// A value set once, awaited by one task; later completions are ignored.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiter: CheckedContinuation<Value, Never>?
    }

    private let state = Mutex(State())

    init() {}

    func complete(_ value: Value) {
        let waiter: CheckedContinuation<Value, Never>? = state.withLock { state in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    func wait() async -> Value {
        await withCheckedContinuation { continuation in
            let ready: Value? = state.withLock { state in
                if let value = state.value { return value }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Wakes the connection loop out of a backoff or an authentication-failure wait, or a socket's handler once the
/// client is done with the socket.
final class WakeSignal: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    init() {}

    func signal() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.signalled = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns when signalled (now or earlier, since the last wait), after `timeout` on `clock`, or on cancellation.
    func wait(timeout: Duration?, on clock: ElapsedClock) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForSignal() }
            if let timeout {
                group.addTask { try? await clock.sleep(for: timeout) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow: Bool = state.withLock { state in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
