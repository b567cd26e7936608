import ConvexSyncProtocol
import ConvexValues

/// One step of the client's view of the deployment: a sync-protocol Transition, which moves every live query of the
/// client from one snapshot of the database to the next at once (convex-js' `onTransition`).
///
/// Every result a Transition changed is in ``changes``; results of one transition belong together (they were read at
/// the same timestamp), so a reader that applies them all before looking at any never sees a state the database never
/// had.
public struct ConvexTransition: Sendable {
    /// One query whose result the transition changed.
    public struct QueryChange: Sendable {
        /// The function path as the subscriber gave it.
        public var functionPath: String
        public var arguments: [String: ConvexValue]
        public var result: Result<ConvexValue, ConvexClientError>
    }

    /// The database timestamp of the snapshot the client's view moved to.
    public var ts: ConvexTimestamp
    /// The queries whose result changed, in the order of the Transition's modifications.
    public var changes: [QueryChange]

    @available(*, deprecated, renamed: "QueryChange")
    public typealias Change = QueryChange
}

/// A group of live queries read transition by transition: what a server that fans results out (the gateway) needs to
/// keep the results of one Transition together.
///
/// ``add(_:with:)`` puts a query into the client's query set (shared with the client's other subscribers of the same
/// query); ``updates`` yields, for every Transition the client applies and every other event that gave members new
/// results, all of them at once with the timestamp of the snapshot they come from. A Transition that changed none of
/// the members still yields an update, with no changes: the members' results hold at its timestamp too. A member that
/// joins a query the client already holds gets its result as an update of its own at the current timestamp. The
/// sequence ends when the set or the client is closed.
public final class ConvexQuerySet: Sendable {
    /// A member of the set, as ``add(_:with:)`` returned it.
    public struct Member: Hashable, Sendable {
        public let rawValue: UInt64
    }

    /// New results of members, all from the snapshot at `ts` (none: the members' results hold at `ts`).
    public struct Update: Sendable {
        public var ts: ConvexTimestamp
        public var changes: [(member: Member, result: Result<ConvexValue, ConvexClientError>)]
    }

    let core: ClientCore
    let id: UInt64
    /// The members' new results, one element per client event (one Transition), in order. Read it once.
    public let updates: AsyncStream<Update>

    init(core: ClientCore) {
        self.core = core
        let (updates, continuation) = AsyncStream.makeStream(of: Update.self)
        self.updates = updates
        self.id = core.addListener(.querySet(continuation))
    }

    /// Adds a live query to the set.
    public func add(_ name: String, with args: [String: ConvexValue] = [:]) -> Member {
        Member(rawValue: core.addSubscriber(udfPath: name, args: args, mailbox: nil, listener: id).raw)
    }

    /// Removes a member; the upstream query goes with its last subscriber.
    public func remove(_ member: Member) {
        core.removeSubscriber(SubscriberID(raw: member.rawValue))
    }

    /// Removes every member and ends ``updates``.
    public func close() {
        core.removeListener(id)
    }

    deinit { close() }
}
