import ConvexSyncProtocol

extension HubState {
    /// What one upstream transition makes, collected change by change and handed out as actions once: the waiting
    /// `GET`s to wake, one ``FanOut`` per changed entry for its single-subscription streams, and one ``Delivery`` per
    /// stream of several subscriptions with every change the transition made to its subscriptions.
    struct TransitionBatch {
        /// The Convex timestamp of the transition's snapshot.
        let ts: ConvexTimestamp
        /// What the hot path reads, to publish before anything is delivered or woken.
        private var publication = Publication()
        private var resumes: [Action] = []
        private var fanOuts: [Action] = []
        /// Each stream's delivery, in the order the streams first come, and where each stream's is.
        private var deliveries: [(sink: any EventSink, delivery: Delivery)] = []
        private var deliveryOf: [ObjectIdentifier: Int] = [:]
        /// Members of streams of several subscriptions whose first result is the one their client holds.
        private var alreadyHeld: [(stream: ObjectIdentifier, member: Int)] = []

        init(ts: ConvexTimestamp) {
            self.ts = ts
        }

        /// An entry's new result is of `version`: `live`, what the hot path reads of it, is to show it.
        mutating func publish(_ version: ResultVersion, of live: LiveResult) {
            publication.versions.append((live, version))
        }

        /// The transition's timestamp is to be published to `view` (after the results' versions).
        mutating func publish(_ ts: ConvexTimestamp, of view: SessionView) {
            publication.session = (view, ts)
        }

        /// Wakes `waiters` (waiting `GET`s) with `current`.
        mutating func resume(_ waiters: Set<UInt64>, with current: CurrentResult) {
            if !waiters.isEmpty { resumes.append(.resume(waiters: Array(waiters), with: (current, ts))) }
        }

        /// Sends `result` to the single-subscription streams of an entry (`sinks`: its fan-out slots).
        mutating func fanOut(_ result: NewResult, to sinks: [(any EventSink)?]) {
            let change = Delivery.MemberResult(member: 0, result: result)
            fanOuts.append(.fanOut(FanOut(delivery: Delivery(ts: ts, changes: [change]), sinks: sinks)))
        }

        /// Adds `change` to the delivery of `sink` (a stream of several subscriptions, `stream` its identity), its
        /// first if it has none yet. `shared`: the one-change list the streams that get this change first share
        /// (copied if one of them gets another change). `expected`: how many streams the change may reach.
        mutating func deliver(
            _ change: Delivery.MemberResult, to sink: any EventSink, stream: ObjectIdentifier,
            shared: inout [Delivery.MemberResult]?, expected: Int
        ) {
            if deliveryOf.isEmpty { deliveryOf.reserveCapacity(expected) }
            let index = Self.index(in: &deliveryOf[stream], next: deliveries.count)
            if index == deliveries.count {
                if shared?.first?.member != change.member { shared = [change] }
                deliveries.append((sink, Delivery(ts: ts, changes: shared!)))
            } else {
                deliveries[index].delivery.changes.append(change)
            }
        }

        /// Member `member` of `stream` (a stream of several subscriptions) got its first result, and it is the one its
        /// client holds: nothing is sent for it.
        mutating func alreadyHeld(member: Int, of stream: ObjectIdentifier) {
            alreadyHeld.append((stream, member))
        }

        /// The actions, in order: publish what the hot path reads, wake the `GET`s, then the fan-outs, then one
        /// delivery to each stream of several subscriptions, its changes in the order of its members. The changes of
        /// streams `resuming` holds back are kept there, and the streams it releases get their delivery here.
        consuming func actions(holding resuming: inout ResumingStreams) -> [Action] {
            var actions: [Action] = publication.isEmpty ? [] : [.publish(publication)]
            actions += resumes
            actions += fanOuts
            if !resuming.isEmpty {
                deliveries.removeAll { resuming.keep($0.delivery.changes, for: ObjectIdentifier($0.sink)) }
                for (stream, member) in alreadyHeld { resuming.alreadyHeld(member: member, of: stream) }
                deliveries += resuming.released(ts: ts)
            }
            if !deliveries.isEmpty {
                for index in deliveries.indices where deliveries[index].delivery.changes.count > 1 {
                    deliveries[index].delivery.changes.sort { $0.member < $1.member }
                }
                actions.append(.deliver(deliveries))
            }
            return actions
        }

        /// The index a dictionary slot holds, or `next`, which it then holds: one lookup for both.
        private static func index(in slot: inout Int?, next: Int) -> Int {
            if let index = slot { return index }
            slot = next
            return next
        }
    }
}
