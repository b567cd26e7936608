import ConvexValues
import Synchronization

/// A one-slot, latest-wins mailbox between the connection (producer) and one subscriber (consumer).
///
/// A query result is state, so a slow consumer sees only the newest result, never a queue.
/// `deliver` and `finish` never block and never call out, so the client may call them while holding its lock.
final class ResultMailbox: Sendable {
    private struct State {
        var pending: QueryResult?
        var waiter: CheckedContinuation<QueryResult?, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    init() {}

    func deliver(_ result: QueryResult) {
        let waiter: CheckedContinuation<QueryResult?, Never>? = state.withLock { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = result
            return nil
        }
        waiter?.resume(returning: result)
    }

    /// No more results: a waiting or later `next()` returns the pending result, if any, then `nil`.
    func finish() {
        let waiter: CheckedContinuation<QueryResult?, Never>? = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next result, or `nil` once finished or when the task is cancelled.
    func next() async -> QueryResult? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<QueryResult?, Never>) in
                let immediate: QueryResult?? = state.withLock { state in
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
