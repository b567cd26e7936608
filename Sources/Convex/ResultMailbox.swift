import ConvexSyncProtocol
import ConvexValues
import Synchronization

/// A one-slot, latest-wins mailbox between the connection (producer) and one subscriber (consumer).
///
/// A query result is state, so a slow consumer sees only the newest result, never a queue. Each result comes with the
/// timestamp of the client's view it belongs to (the snapshot it was read at, or a later one it still holds at).
/// `deliver` and `finish` never block and never call out, so the client may call them while holding its lock.
final class ResultMailbox: Sendable {
    private struct State {
        var pending: Stamped?
        var waiter: CheckedContinuation<Stamped?, Never>?
        var finished = false
    }

    /// A result and the timestamp of the view it belongs to.
    struct Stamped: Sendable {
        var result: QueryResult
        var ts: ConvexTimestamp
    }

    private let state = Mutex(State())

    init() {}

    func deliver(_ result: QueryResult, at ts: ConvexTimestamp = .zero) {
        let stamped = Stamped(result: result, ts: ts)
        let waiter: CheckedContinuation<Stamped?, Never>? = state.withLock { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = stamped
            return nil
        }
        waiter?.resume(returning: stamped)
    }

    /// No more results: a waiting or later `next()` returns the pending result, if any, then `nil`.
    func finish() {
        let waiter: CheckedContinuation<Stamped?, Never>? = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next result, or `nil` once finished or when the task is cancelled.
    func next() async -> QueryResult? {
        await nextStamped()?.result
    }

    /// The next result with its view's timestamp, or `nil` once finished or when the task is cancelled.
    func nextStamped() async -> Stamped? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Stamped?, Never>) in
                let immediate: Stamped?? = state.withLock { state in
                    if let pending = state.pending {
                        state.pending = nil
                        return .some(pending)
                    }
                    if state.finished || Task.isCancelled {
                        return .some(nil)
                    }
                    state.waiter = continuation
                    return .none
                }
                if let immediate {
                    continuation.resume(returning: immediate)
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
}
