import Synchronization

/// The sink of one long-poll `GET` (``SubscriptionHub/nextChange(of:from:args:upstream:format:timeout:)``): the
/// first update whose hash differs from the one the client holds ends the wait, and so do the timeout, the end of
/// the subscription, and shutdown (with `nil`). It ends once; later calls do nothing.
final class ChangeWaiter: EventSink {
    let format: OutputFormat
    private let held: UInt64

    private enum State {
        case waiting(CheckedContinuation<SubscriptionUpdate?, Never>?)
        /// Ended before anyone awaited the outcome.
        case ended(SubscriptionUpdate?)
        case done
    }

    private let state = Mutex(State.waiting(nil))

    init(format: OutputFormat, held: UInt64) {
        self.format = format
        self.held = held
    }

    func deliver(_ transition: StreamTransition) {
        if let update = transition.changes.last?.update, update.hash != held { end(with: update) }
    }

    func finish() { end(with: nil) }

    /// Ends the wait with `update` (`nil`: no change).
    func end(with update: SubscriptionUpdate?) {
        let continuation = state.withLock { state -> CheckedContinuation<SubscriptionUpdate?, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            if let continuation {
                state = .done
                return continuation
            }
            state = .ended(update)
            return nil
        }
        continuation?.resume(returning: update)
    }

    /// The changed update, or `nil` when the wait ended without a change.
    func outcome() async -> SubscriptionUpdate? {
        await withCheckedContinuation { (continuation: CheckedContinuation<SubscriptionUpdate?, Never>) in
            let ended = state.withLock { state -> SubscriptionUpdate?? in
                switch state {
                case .waiting:
                    state = .waiting(continuation)
                    return .none
                case .ended(let update):
                    state = .done
                    return .some(update)
                case .done:
                    return .some(nil)
                }
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }
}
