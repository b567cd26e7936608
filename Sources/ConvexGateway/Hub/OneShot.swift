import Synchronization

/// A value given once and awaited once, by whichever comes first: ``end(with:)`` before ``value()`` is awaited keeps
/// the value until then, and every later ``end(with:)`` does nothing. The hub's waits (a first result, a long-poll, a
/// session reaching a timestamp) end through one of these, so that their deadline can end them at any moment, even
/// before they are awaited.
final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value, Never>?)
        /// Ended before anyone awaited the value.
        case ended(Value)
        case done
    }

    private let state = Mutex(State.waiting(nil))

    /// Ends the wait with `value`; a wait that has ended already is left as it is.
    func end(with value: Value) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = continuation == nil ? .ended(value) : .done
            return continuation
        }
        continuation?.resume(returning: value)
    }

    /// The value, once ended. Awaited once.
    func value() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let ended = state.withLock { state -> Value? in
                switch state {
                case .waiting:
                    state = .waiting(continuation)
                    return nil
                case .ended(let value):
                    state = .done
                    return value
                case .done:
                    preconditionFailure("OneShot.value() awaited twice")
                }
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }
}
