import ConvexSyncProtocol

extension HubState {
    /// Streams of several subscriptions that resumed (`Last-Event-ID`) holding a result of a subscription this gateway
    /// has no result for yet (after a restart, or on another replica): their client holds results of an older
    /// snapshot. The members' first results can come in different upstream transitions, and sending each as it comes
    /// would leave the client with a mix of two snapshots, so such a stream gets nothing until every member without a
    /// result has its first, and then one delivery at that transition's snapshot with everything that changed.
    struct ResumingStreams {
        fileprivate struct Stream {
            let sink: any EventSink
            /// The members still without a first result.
            var waitingFor: Set<Int>
            /// The latest change of each member since the stream attached.
            var changes: [Int: Delivery.MemberResult] = [:]
        }

        private var byStream: [ObjectIdentifier: Stream] = [:]

        /// The members a stream of `members` that just attached waits for before it gets anything: those without a
        /// result, when its client holds the result of one of them (none otherwise: a client that holds nothing of a
        /// member cannot mix it with anything).
        static func waits(of members: [Member], in table: EntryTable) -> Set<Int> {
            guard members.count > 1 else { return [] }
            var waits: Set<Int> = []
            var holdsOne = false
            for (index, member) in members.enumerated() where table.byKey[member.key]?.current == nil {
                waits.insert(index)
                holdsOne = holdsOne || member.held != nil
            }
            return holdsOne ? waits : []
        }

        var isEmpty: Bool { byStream.isEmpty }

        /// How many streams are held back.
        var count: Int { byStream.count }

        /// Holds `sink` back until each of `waitingFor` (members without a result) has its first; `initial`: the
        /// results of the others that it attached with, kept to send with them.
        mutating func hold(_ sink: any EventSink, initial: [Delivery.MemberResult], waitingFor: Set<Int>) {
            var stream = Stream(sink: sink, waitingFor: waitingFor)
            for change in initial { stream.keep(change) }
            byStream[ObjectIdentifier(sink)] = stream
        }

        /// The stream left or ended. Nothing to look up while no stream is held back: every stream that leaves, and
        /// each of the streams of an entry that ends, comes here.
        mutating func drop(_ stream: ObjectIdentifier) {
            if !byStream.isEmpty { byStream[stream] = nil }
        }

        /// Keeps `changes` if `stream` is held back. Returns whether it is.
        mutating func keep(_ changes: [Delivery.MemberResult], for stream: ObjectIdentifier) -> Bool {
            guard byStream[stream] != nil else { return false }
            for change in changes { byStream[stream]!.keep(change) }
            return true
        }

        /// Member `member` of `stream` has its first result, and it is the one the client holds: nothing to send.
        mutating func alreadyHeld(member: Int, of stream: ObjectIdentifier) {
            byStream[stream]?.waitingFor.remove(member)
        }

        /// The streams whose every member now has a result, each with one delivery at `ts`, its start (empty when its
        /// client held every first result); they are not held back any more.
        mutating func released(ts: ConvexTimestamp) -> [(sink: any EventSink, delivery: Delivery)] {
            var released: [(sink: any EventSink, delivery: Delivery)] = []
            for (id, stream) in byStream where stream.waitingFor.isEmpty {
                byStream[id] = nil
                released.append((stream.sink, Delivery(ts: ts, changes: Array(stream.changes.values), isFirst: true)))
            }
            return released
        }
    }
}

extension HubState.ResumingStreams.Stream {
    /// Keeps `change` as its member's latest; a member that changed before keeps the first change's `previous`, what
    /// the client holds, so that a JSON Patch is made against it.
    fileprivate mutating func keep(_ change: HubState.Delivery.MemberResult) {
        waitingFor.remove(change.member)
        guard let earlier = changes[change.member] else {
            changes[change.member] = change
            return
        }
        // Its own renderings: its patch is made against another result than the one the entry's is.
        let result = HubState.NewResult(
            key: change.key, current: change.current, previous: earlier.previous, renderings: ResultRenderings())
        changes[change.member] = HubState.Delivery.MemberResult(member: change.member, result: result)
    }
}
