import ConvexSyncProtocol
import ConvexValues

/// The subscription hub's bookkeeping as a plain state machine: each event (a stream attaching or leaving, a `GET`
/// waiting for a first result, a caller waiting for an identity's results to reach a timestamp, a wait's deadline, an
/// upstream transition, the upstream ending, the sweeper's tick, shutdown) updates the state and returns the actions
/// its owner, ``SubscriptionHub``, carries out, arming and cancelling the waits' deadlines among them. Waits are
/// numbered by the owner, which keeps what wakes each and one timer per deadline. No I/O and no clock: time comes in
/// as `now`, the hub clock's reading (``GatewayClock/now``).
///
/// It is composed of plain parts, each in a file of its own with its own tests: the entries (``EntryTable``, of
/// ``Entry``, each with its streams and waiting `GET`s), the upstream connections' snapshots
/// and timestamp waits (``Sessions``), every wait's deadline (``Waits``), the streams held back while they resume
/// (``ResumingStreams``), and what one transition makes (``TransitionBatch``). This file holds the events of streams;
/// HubState+WaitEvents.swift those of waits; HubState+Upstream.swift those of the upstream and of time.
///
/// Results come one upstream transition at a time, and a stream gets the changes one transition made to its
/// subscriptions as one delivery: a stream never holds a mix of two snapshots of the database (a resumed one too:
/// ``ResumingStreams``).
struct HubState {
    typealias Key = SubscriptionHub.Key
    typealias Member = SubscriptionHub.Member

    enum Action {
        /// Show the hot path, which reads without the hub's lock, what changed: carried out first, before anything
        /// is delivered or woken, so that a reader that got a result finds it there too.
        case publish(Publication)
        /// Open the upstream subscription of a new entry.
        case subscribe(Key, entryID: UInt64, args: ConvexValue)
        /// Close an entry's upstream subscription.
        case unsubscribe(Key, entryID: UInt64)
        /// Wake waiting `GET`s with a result and the timestamp it holds at (`nil`: none will come).
        case resume(waiters: [UInt64], with: (current: CurrentResult, ts: ConvexTimestamp)?)
        /// Wake callers waiting for a timestamp: whether their identity's results reached it.
        case reached(waiters: [UInt64], Bool)
        /// End these waits with nothing (no first result, the timestamp not reached, no change): their deadline came,
        /// or their caller left.
        case giveUp(waiters: [UInt64])
        /// Arm the deadline of wait `wait`: at `at` (the hub clock's time), tell ``HubState/waitEnded(_:now:)``.
        case armDeadline(wait: UInt64, at: Duration)
        /// Cancel the deadlines of these waits: they have ended.
        case cancelDeadlines([UInt64])
        /// Send each stream its delivery, at once: the changes of one transition to the subscriptions of streams of
        /// several subscriptions, or a stream's first results as it attaches. Each stream is in the list once.
        case deliver([(sink: any EventSink, delivery: Delivery)])
        /// Send each of `sinks` the same delivery of one change (streams of that one subscription).
        case fanOut(FanOut)
        /// End streams (the upstream ended, or the hub shut down).
        case end([any EventSink])
    }

    // The parts: the events (here and in HubState+Upstream.swift) change them, the owner only reads them (a rule of
    // the house, not enforced: the events' extensions in other files need the setters).
    var table: EntryTable
    var sessions = Sessions()
    var resuming = ResumingStreams()
    var waits = Waits()
    var isShutDown = false

    /// `maxSubscriptionsPerCaller`: the entries one caller may have made and still live (its default is the
    /// configuration's, ``GatewayConfiguration/effectiveMaxSubscriptionsPerCaller``).
    init(keepWarm: Duration, maxSubscriptions: Int, maxSubscriptionsPerCaller: Int) {
        table = EntryTable(
            keepWarm: keepWarm, maxSubscriptions: maxSubscriptions, maxSubscriptionsPerCaller: maxSubscriptionsPerCaller
        )
    }

    /// The live subscriptions by key (a read: the events change them).
    var entries: [Key: Entry] { table.byKey }

    // MARK: Streams

    /// A stream attaches its subscriptions (all of one identity). It gets `initial` at once: the current result of
    /// every member that has one (unless its `held` hash shows the client has it), all from one snapshot; a member
    /// without a result yet joins in the first transition that carries it. The subscriptions it makes (a member's that
    /// expired since its first result) are charged to `caller`. The subscription limits are not asked here: a stream
    /// attaches after it was admitted and answered (its first results' wait, ``wait(_:for:args:caller:deadline:now:)``,
    /// is where a limit refuses), so only shutdown refuses it.
    mutating func attach(
        _ sink: any EventSink, members: [Member], caller: SubscriptionCaller = .unknown, now: Duration
    ) throws(SubscriptionHub.AttachError) -> (initial: Delivery?, actions: [Action]) {
        if isShutDown { throw .shuttingDown }
        var actions: [Action] = []
        var initial: [Delivery.MemberResult] = []
        for (index, member) in members.enumerated() {
            if let subscribe = ensureEntry(member.key, args: member.args, owner: caller, now: now) {
                actions.append(subscribe)
            }
            if let current = table.byKey[member.key]!.attach(
                sink, member: index, of: members.count, held: member.held)
            {
                let renderings = table.byKey[member.key]!.renderings
                let result = NewResult(key: member.key, current: current, previous: nil, renderings: renderings)
                initial.append(Delivery.MemberResult(member: index, result: result))
            }
        }
        let waits = ResumingStreams.waits(of: members, in: table)
        if !waits.isEmpty {
            resuming.hold(sink, initial: initial, waitingFor: waits)
            return (nil, actions)
        }
        // A stream of several subscriptions gets its start even when it holds everything: it keeps what overtakes
        // its start (``StreamTransition/isFirst``) until it comes.
        guard !initial.isEmpty || members.count > 1, let identity = members.first?.key.identity else {
            return (nil, actions)
        }
        return (Delivery(ts: sessions.timestamp(of: identity), changes: initial, isFirst: true), actions)
    }

    /// A stream leaves (`members`: the keys of its subscriptions, in order). Returns whether it was attached.
    mutating func detach(_ sink: ObjectIdentifier, members: [Key], now: Duration) -> Bool {
        resuming.drop(sink)
        var wasAttached = false
        for (index, key) in members.enumerated() {
            guard table.byKey[key]?.detach(sink, member: index, of: members.count) == true else { continue }
            wasAttached = true
            table.markIdleIfUnread(key, now: now)
        }
        return wasAttached
    }

    // MARK: Reads for the owner

    /// The current result of `key`, with what is made of it for its readers (``ResultRenderings``, which the hub
    /// hands out and never reads), and the timestamp it holds at.
    func current(
        _ key: Key
    ) -> (current: CurrentResult, renderings: ResultRenderings, live: LiveResult, ts: ConvexTimestamp)? {
        guard let entry = table.byKey[key], let current = entry.current else { return nil }
        return (current, entry.renderings, entry.live, sessions.timestamp(of: key.identity))
    }

    /// The timestamp the results of `identity`'s connection hold at: that of the last transition applied for it
    /// (``ConvexTimestamp/zero`` before the first).
    func timestamp(of identity: String) -> ConvexTimestamp {
        sessions.timestamp(of: identity)
    }

    /// Makes the entry of `key` unless there is one, charged to `owner`; the upstream subscription to open for it.
    mutating func ensureEntry(_ key: Key, args: ConvexValue, owner: SubscriptionCaller, now: Duration)
        -> Action?
    {
        guard table.byKey[key] == nil else { return nil }
        let session = sessions.view(of: key.identity)
        return table.ensure(key, args: args, owner: owner) { LiveResult(now: now, session: session) }
    }
}
