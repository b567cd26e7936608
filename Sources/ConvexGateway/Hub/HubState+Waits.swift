extension HubState {
    /// The waits with a deadline, by number, and what each waits for: a `GET`'s first result, an identity's results
    /// reaching a timestamp, or a long-poll's next change. Each wait begins with an action arming its deadline, and
    /// whichever ends it (its result, its timestamp reached, its deadline, its caller leaving, the upstream ending,
    /// shutdown) ends it here once, with an action cancelling that deadline: the owner keeps one timer per wait and
    /// only carries the actions out (``SubscriptionHub``).
    struct Waits {
        enum Kind: Equatable {
            /// A `GET` waiting for the first result of the key (one of its entry's ``Entry/waiters``).
            case firstResult(Key)
            /// A caller waiting for an identity's results to reach a timestamp (``Sessions``).
            case timestamp
            /// A long-poll `GET`, attached as a sink, waiting for the next change.
            case change
        }

        private(set) var open: [UInt64: Kind] = [:]

        var isEmpty: Bool { open.isEmpty }

        /// A wait begins: the action arming its deadline.
        mutating func begin(_ wait: UInt64, _ kind: Kind, deadline: Duration) -> Action {
            open[wait] = kind
            return .armDeadline(wait: wait, at: deadline)
        }

        /// Ends a wait, whichever way; what it waited for, `nil` if it had ended already.
        mutating func end(_ wait: UInt64) -> Kind? {
            open.removeValue(forKey: wait)
        }

        /// The actions `actions` lead to once carried out: the deadlines of the waits they wake (`resume`, `reached`)
        /// are cancelled, and those waits end here. Nothing is looked at while no wait is open.
        mutating func ending(_ actions: inout [Action]) {
            guard !open.isEmpty else { return }
            var ended: [UInt64] = []
            for action in actions {
                switch action {
                case .resume(let waiters, _), .reached(let waiters, _):
                    ended += waiters.filter { open.removeValue(forKey: $0) != nil }
                default:
                    break
                }
            }
            if !ended.isEmpty { actions.append(.cancelDeadlines(ended)) }
        }
    }
}
