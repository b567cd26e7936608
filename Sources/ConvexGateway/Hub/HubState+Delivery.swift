import ConvexSyncProtocol

extension HubState {
    /// The changes one upstream transition (or a stream's start) brings one stream, in the order of its members.
    struct Delivery {
        struct MemberResult {
            var member: Int
            /// One entry's new result, shared by every stream the transition brings it to.
            var result: NewResult

            var key: Key { result.key }
            var current: CurrentResult { result.current }
            /// The result it replaces (what a JSON Patch is made against).
            var previous: CurrentResult? { result.previous }

            init(member: Int, result: NewResult) {
                self.member = member
                self.result = result
            }

        }

        /// The Convex timestamp of the snapshot the results come from.
        var ts: ConvexTimestamp
        var changes: [MemberResult]
        /// A stream's start (``StreamTransition/isFirst``), which a stream of several subscriptions gets even when it
        /// has no change.
        var isFirst = false
    }

    /// An entry's new result as one transition (or a stream's start) brings it: one object however many streams it
    /// reaches, so a stream's share of it is one reference. It carries what is made of it for its readers
    /// (``ResultRenderings``), shared with every other delivery of the same result.
    final class NewResult: Sendable {
        let key: Key
        let current: CurrentResult
        let previous: CurrentResult?
        let renderings: ResultRenderings

        init(key: Key, current: CurrentResult, previous: CurrentResult?, renderings: ResultRenderings) {
            self.key = key
            self.current = current
            self.previous = previous
            self.renderings = renderings
        }
    }

    /// One change for every stream whose only subscription it is: they all get the same one-change delivery (member
    /// 0), so a change that reaches 10,000 such streams is one action with one delivery, not 10,000 of each.
    struct FanOut {
        var delivery: Delivery
        /// The entry's ``FanOutSinks/slots`` as they were (a copy that shares their storage): the streams in the order
        /// they attached, `nil` where one left.
        var sinks: [(any EventSink)?]
    }

    /// One upstream result of one entry, as a transition brings it.
    struct EntryResult {
        var key: Key
        var entryID: UInt64
        var result: UpstreamResult
        /// Identifies the result: equal results have equal hashes.
        var hash: ContentHash
    }
}

extension HubState {
    /// What the hot path reads of the hub without its lock (``LiveResult``, ``SessionView``), as the state machine
    /// changed it: the state machine only says so, and the owner writes it after leaving the lock, in this order.
    struct Publication {
        /// Subscriptions with a new result, and its version.
        var versions: [(live: LiveResult, version: ResultVersion)] = []
        /// A connection's new snapshot timestamp, published after the versions: a reader that sees the timestamp
        /// finds the results.
        var session: (view: SessionView, ts: ConvexTimestamp)?
        /// Subscriptions that are gone.
        var retired: [LiveResult] = []

        var isEmpty: Bool { versions.isEmpty && session == nil && retired.isEmpty }

        /// Writes it (the owner, outside the hub's lock).
        func carryOut() {
            for (live, version) in versions { live.advance(to: version) }
            if let (view, ts) = session { view.advance(to: ts) }
            for live in retired { live.retire() }
        }
    }
}
