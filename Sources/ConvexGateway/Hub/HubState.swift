import ConvexValues

/// The subscription hub's bookkeeping as a plain state machine: each event (a stream attaching or leaving, a `GET`
/// waiting for a first result, a caller waiting for an identity's results to reach a timestamp, a wait's deadline, an
/// upstream transition, the upstream ending, the sweeper's tick, shutdown) updates the state and returns the actions
/// its owner, ``SubscriptionHub``, carries out. Waits are numbered by the owner, which keeps what wakes each. No I/O
/// and no clock: time comes in as `now`, the hub clock's reading (``GatewayClock/now``).
///
/// Results come one upstream transition at a time, and a stream gets the changes one transition made to its
/// subscriptions as one delivery: a stream never holds a mix of two snapshots of the database.
struct HubState {
    typealias Key = SubscriptionHub.Key
    typealias Member = SubscriptionHub.Member

    /// One subscription of one stream.
    struct Attachment {
        var sink: any EventSink
        /// The subscription's index in its stream.
        var member: Int
        /// The hash of the result the client holds (from `Last-Event-ID`) while the entry has no result yet: the
        /// first result is not sent if it is that one.
        var held: UInt64?
        /// Whether this is its stream's only subscription (a `/subscribe/<function>` stream, or a set of one): such
        /// streams get a change as part of one ``FanOut``. One is kept here only while it has a `held` hash; then it
        /// joins its entry's ``Entry/fanOut``.
        var alone: Bool
    }

    struct AttachmentID: Hashable {
        var sink: ObjectIdentifier
        var member: Int
    }

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

            init(member: Int, key: Key, current: CurrentResult, previous: CurrentResult?) {
                self.init(member: member, result: NewResult(key: key, current: current, previous: previous))
            }
        }

        /// The Convex timestamp of the snapshot the results come from.
        var ts: UInt64
        var changes: [MemberResult]
    }

    /// An entry's new result as one transition (or a stream's start) brings it: one object however many streams it
    /// reaches, so a stream's share of it is one reference.
    final class NewResult: Sendable {
        let key: Key
        let current: CurrentResult
        let previous: CurrentResult?

        init(key: Key, current: CurrentResult, previous: CurrentResult?) {
            self.key = key
            self.current = current
            self.previous = previous
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
        var generation: UInt64
        var result: UpstreamResult
        /// Identifies the result: equal results have equal hashes.
        var hash: UInt64
    }

    struct Entry {
        let generation: UInt64
        let args: ConvexValue
        /// The caller that made it, charged for it while it lives (``SubscriptionCaller``).
        let owner: SubscriptionCaller
        var current: CurrentResult?
        var version: UInt64 = 0
        /// The subscriptions of streams of several subscriptions, and those of single-subscription streams that
        /// still wait for a result other than the one they hold (`held`).
        var attachments: [AttachmentID: Attachment] = [:]
        /// The single-subscription streams that take every change, in the order they attached.
        var fanOut = FanOutSinks()
        var waiters: Set<UInt64> = []
        /// When the last reader left; `nil` while streams or waiting `GET`s read it.
        var idleSince: Duration?
        /// The current result's revision and the last `GET` read, readable without the hub's lock.
        let live: LiveResult
        /// Rendered values of `current` (a `GET`'s body), by output mode.
        var bodies: [OutputFormat: [UInt8]] = [:]
        /// The shared event bytes of `current`'s updates, by output mode (framed by the first stream that sends one).
        var frames: [OutputFormat: FramedOnce] = [:]

        var hasReaders: Bool { !attachments.isEmpty || !fanOut.isEmpty || !waiters.isEmpty }
    }

    enum Action {
        /// Open the upstream subscription of a new entry.
        case subscribe(Key, generation: UInt64, args: ConvexValue)
        /// Close an entry's upstream subscription.
        case unsubscribe(Key, generation: UInt64)
        /// Wake waiting `GET`s with a result and the timestamp it holds at (`nil`: none will come).
        case resume(waiters: [UInt64], with: (current: CurrentResult, ts: UInt64)?)
        /// Wake callers waiting for a timestamp: whether their identity's results reached it.
        case reached(waiters: [UInt64], Bool)
        /// Send each stream its delivery, at once: the changes of one transition to the subscriptions of streams of
        /// several subscriptions, or a stream's first results as it attaches. Each stream is in the list once.
        case deliver([(sink: any EventSink, delivery: Delivery)])
        /// Send each of `sinks` the same delivery of one change (streams of that one subscription).
        case fanOut(FanOut)
        /// End streams (the upstream ended, or the hub shut down).
        case end([any EventSink])
    }

    /// How a `GET`'s wait for a first result begins. Only `waiting` keeps a wait; every other answer is final.
    enum WaitStart {
        /// Answered at once: the current result and the timestamp it holds at.
        case ready((current: CurrentResult, ts: UInt64))
        /// Waiting; carry out the actions (a new upstream subscription).
        case waiting([Action])
        /// Refused: nothing subscribes to the key, and `limit` is reached (the gateway's, or the caller's).
        case full(SubscriptionLimit)
        /// Refused: the hub is shut down.
        case shutDown
    }

    let keepWarm: Duration
    let maxSubscriptions: Int
    /// The entries one caller may have made and still live (``SubscriptionCaller``).
    let maxPerCaller: Int
    private(set) var entries: [Key: Entry] = [:]
    /// Per caller, the live entries it made (callers with none are not kept).
    private(set) var charged: [SubscriptionCaller: Int] = [:]
    /// Per identity (one upstream connection), the timestamp of the last transition: the snapshot its entries hold.
    private(set) var sessions: [String: SessionView] = [:]
    /// Callers waiting for the results of an identity to hold at a timestamp (read-your-writes), by wait.
    private(set) var timestampWaits: [UInt64: (identity: String, target: UInt64)] = [:]
    private var nextGeneration: UInt64 = 1
    private(set) var isShutDown = false

    /// `maxPerCaller`: the entries one caller may have made and still live; `nil` bounds them by `maxSubscriptions`
    /// alone.
    init(keepWarm: Duration, maxSubscriptions: Int, maxPerCaller: Int? = nil) {
        self.keepWarm = keepWarm
        self.maxSubscriptions = maxSubscriptions
        self.maxPerCaller = maxPerCaller ?? maxSubscriptions
    }

    // MARK: Readers

    /// A stream attaches its subscriptions (all of one identity). It gets `initial` at once: the current result of
    /// every member that has one (unless its `held` hash shows the client has it), all from one snapshot; a member
    /// without a result yet joins in the first transition that carries it. The subscriptions it makes are charged to
    /// `caller`.
    mutating func attach(
        _ sink: any EventSink, members: [Member], caller: SubscriptionCaller = .unknown, now: Duration
    ) throws(SubscriptionHub.AttachError) -> (initial: Delivery?, actions: [Action]) {
        if isShutDown { throw .shuttingDown }
        let newKeys = Set(members.map(\.key)).filter { entries[$0] == nil }
        if !newKeys.isEmpty {
            if entries.count + newKeys.count > maxSubscriptions { throw .tooManySubscriptions }
            if charged[caller, default: 0] + newKeys.count > maxPerCaller { throw .tooManySubscriptionsForCaller }
        }
        var actions: [Action] = []
        var initial: [Delivery.MemberResult] = []
        let stream = ObjectIdentifier(sink)
        for (index, member) in members.enumerated() {
            actions += ensureEntry(member.key, args: member.args, owner: caller, now: now)
            let current = entries[member.key]!.current
            let held = current == nil ? member.held : nil
            if members.count == 1 && held == nil {
                entries[member.key]!.fanOut.append(sink)
            } else {
                entries[member.key]!.attachments[AttachmentID(sink: stream, member: index)] = Attachment(
                    sink: sink, member: index, held: held, alone: members.count == 1)
            }
            entries[member.key]!.idleSince = nil
            if let current, current.hash != member.held {
                initial.append(
                    Delivery.MemberResult(member: index, key: member.key, current: current, previous: nil))
            }
        }
        guard !initial.isEmpty, let identity = members.first?.key.identity else { return (nil, actions) }
        return (Delivery(ts: timestamp(of: identity), changes: initial), actions)
    }

    /// A stream leaves (`members`: the keys of its subscriptions, in order). Returns whether it was attached.
    mutating func detach(_ sink: ObjectIdentifier, members: [Key], now: Duration) -> Bool {
        var wasAttached = false
        for (index, key) in members.enumerated() {
            guard
                entries[key]?.attachments.removeValue(forKey: AttachmentID(sink: sink, member: index)) != nil
                    || (members.count == 1 && entries[key]?.fanOut.remove(sink) == true)
            else {
                continue
            }
            wasAttached = true
            markIdleIfUnread(key, now: now)
        }
        return wasAttached
    }

    /// A `GET` waits for the first result of `key`, subscribing upstream (charged to `caller`) if nothing does yet.
    mutating func wait(
        _ waiter: UInt64, for key: Key, args: ConvexValue, caller: SubscriptionCaller = .unknown, now: Duration
    ) -> WaitStart {
        if isShutDown { return .shutDown }
        if let current = entries[key]?.current { return .ready((current, timestamp(of: key.identity))) }
        if entries[key] == nil {
            if entries.count >= maxSubscriptions { return .full(.gateway) }
            if charged[caller, default: 0] >= maxPerCaller { return .full(.caller) }
        }
        let actions = ensureEntry(key, args: args, owner: caller, now: now)
        entries[key]!.waiters.insert(waiter)
        entries[key]!.idleSince = nil
        return .waiting(actions)
    }

    /// A waiting `GET` gives up (its timeout). Returns whether it was still waiting.
    mutating func stopWaiting(_ waiter: UInt64, for key: Key, now: Duration) -> Bool {
        guard entries[key]?.waiters.remove(waiter) != nil else { return false }
        markIdleIfUnread(key, now: now)
        return true
    }

    // MARK: Read-your-writes

    /// A caller waits for the results of `identity` to hold at `target` or later. `subscribed`: whether the hub reads
    /// subscriptions of the identity's connection (without, its next subscriptions start from the connection's view,
    /// so `target` is reached). Returns the answer when there is one at once, `nil` while waiting.
    mutating func waitForTimestamp(_ wait: UInt64, identity: String, target: UInt64, subscribed: Bool) -> Bool? {
        if !subscribed || timestamp(of: identity) >= target { return true }
        if isShutDown { return false }
        timestampWaits[wait] = (identity, target)
        return nil
    }

    /// A timestamp wait's deadline came. Returns whether it was still waiting (it is not any more).
    mutating func stopWaitingForTimestamp(_ wait: UInt64) -> Bool {
        timestampWaits.removeValue(forKey: wait) != nil
    }

    /// The timestamp waits of `identity` that its results reached (or all of them, with `false`, when its upstream
    /// `ended`), removed.
    private mutating func timestampWaitsDone(_ identity: String, ended: Bool) -> [Action] {
        guard !timestampWaits.isEmpty else { return [] }
        let ts = timestamp(of: identity)
        let done = timestampWaits.filter { $0.value.identity == identity && (ended || $0.value.target <= ts) }.keys
        guard !done.isEmpty else { return [] }
        for wait in done { timestampWaits[wait] = nil }
        return [.reached(waiters: Array(done), !ended)]
    }

    // MARK: Upstream

    /// An upstream transition of the connection of `identity`: the new results of some entries (a change of an
    /// entry of another generation is ignored). `wallMilliseconds` (the wall clock) keeps event ids growing across
    /// gateway restarts and replicas. Each stream gets one delivery with every change of its subscriptions; timestamp
    /// waits of the identity that the transition reached end last.
    mutating func receive(
        ts: UInt64, identity: String, changes: [EntryResult], wallMilliseconds: UInt64, now: Duration
    ) -> [Action] {
        var actions = apply(changes, ts: ts, wallMilliseconds: wallMilliseconds, now: now)
        // After the results: a reader that sees the new timestamp finds them.
        session(of: identity).advance(to: ts)
        actions += timestampWaitsDone(identity, ended: false)
        return actions
    }

    private mutating func apply(
        _ changes: [EntryResult], ts: UInt64, wallMilliseconds: UInt64, now: Duration
    ) -> [Action] {
        var actions: [Action] = []
        // Streams of several subscriptions: each stream's delivery, in the order the streams first come, and where
        // each stream's is.
        var deliveries: [(sink: any EventSink, delivery: Delivery)] = []
        var deliveryOf: [ObjectIdentifier: Int] = [:]
        var fanOuts: [Action] = []
        for change in changes {
            let key = change.key
            guard var entry = entries[key], entry.generation == change.generation else { continue }
            let waiters = entry.waiters
            entry.waiters = []
            if let current = entry.current, current.hash == change.hash {
                if !waiters.isEmpty { actions.append(.resume(waiters: Array(waiters), with: (current, ts))) }
                entries[key] = entry
                markIdleIfUnread(key, now: now)
                continue
            }
            let previous = entry.current
            entry.version = max(entry.version + 1, wallMilliseconds)
            let current = CurrentResult(
                id: ResumeID(version: entry.version, held: [change.hash]).text, version: entry.version,
                hash: change.hash,
                result: change.result)
            entry.current = current
            entry.bodies = [:]
            entry.frames = [:]
            entry.live.advance()
            let result = NewResult(key: key, current: current, previous: previous)
            var only: [Delivery.MemberResult]?
            // Single-subscription streams that held a hash join the fan-out now: after this change if it is the
            // result they hold, with it otherwise.
            var joinAfter: [any EventSink] = []
            for (id, attachment) in entry.attachments {
                if let held = attachment.held {
                    if attachment.alone {
                        entry.attachments[id] = nil
                        if held == change.hash {
                            joinAfter.append(attachment.sink)
                        } else {
                            entry.fanOut.append(attachment.sink)
                        }
                        continue
                    }
                    entry.attachments[id]?.held = nil
                    if held == change.hash { continue }
                }
                let change = Delivery.MemberResult(member: attachment.member, result: result)
                if deliveryOf.isEmpty { deliveryOf.reserveCapacity(entry.attachments.count) }
                let index = Self.index(in: &deliveryOf[id.sink], next: deliveries.count)
                if index == deliveries.count {
                    // Streams with the change in the same place share its list (copied if one gets another change).
                    if only?.first?.member != change.member { only = [change] }
                    deliveries.append((attachment.sink, Delivery(ts: ts, changes: only!)))
                } else {
                    deliveries[index].delivery.changes.append(change)
                }
            }
            if !entry.fanOut.isEmpty {
                let change = Delivery.MemberResult(member: 0, result: result)
                fanOuts.append(
                    .fanOut(FanOut(delivery: Delivery(ts: ts, changes: [change]), sinks: entry.fanOut.slots)))
            }
            for sink in joinAfter { entry.fanOut.append(sink) }
            entries[key] = entry
            markIdleIfUnread(key, now: now)
            if !waiters.isEmpty { actions.append(.resume(waiters: Array(waiters), with: (current, ts))) }
        }
        actions += fanOuts
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

    /// The upstream subscription ended without being cancelled (its connection closed): streams end so that their
    /// clients reconnect and resubscribe, and waiting `GET`s get no result.
    mutating func upstreamEnded(_ key: Key, generation: UInt64) -> [Action] {
        guard let entry = entries[key], entry.generation == generation else { return [] }
        remove(key, entry)
        entry.live.retire()
        return Self.ending(entry)
    }

    /// The connection of `identity` ended for the hub (closed, or it refused the credentials): each of its entries
    /// (`members`: key and generation) ends as ``upstreamEnded(_:generation:)``, and its timestamp waits get `false`.
    mutating func connectionEnded(identity: String, members: [(key: Key, generation: UInt64)]) -> [Action] {
        var actions: [Action] = []
        for (key, generation) in members { actions += upstreamEnded(key, generation: generation) }
        return actions + timestampWaitsDone(identity, ended: true)
    }

    // MARK: Time

    /// The sweeper's tick: closes subscriptions nobody has read for the keep-warm period (streams, waiting `GET`s
    /// and answered `GET`s all count as reads).
    mutating func tick(now: Duration) -> [Action] {
        var actions: [Action] = []
        for (key, entry) in entries {
            guard let idleSince = entry.idleSince, now - max(idleSince, entry.live.lastRead) >= keepWarm else {
                continue
            }
            remove(key, entry)
            entry.live.retire()
            actions.append(.unsubscribe(key, generation: entry.generation))
        }
        if !actions.isEmpty {
            let identities = Set(entries.keys.map(\.identity))
            sessions = sessions.filter { identities.contains($0.key) }
        }
        return actions
    }

    /// Ends everything; later attaches fail with `.shuttingDown`.
    mutating func shutdown() -> [Action] {
        isShutDown = true
        var actions: [Action] = []
        for (key, entry) in entries {
            entry.live.retire()
            actions.append(.unsubscribe(key, generation: entry.generation))
            actions += Self.ending(entry)
        }
        entries = [:]
        charged = [:]
        if !timestampWaits.isEmpty {
            actions.append(.reached(waiters: Array(timestampWaits.keys), false))
            timestampWaits = [:]
        }
        return actions
    }

    // MARK: Reads for the owner

    /// The current result of `key` with what is cached of its rendering in `format`, and the timestamp it holds at.
    func current(
        _ key: Key, format: OutputFormat
    ) -> (current: CurrentResult, body: [UInt8]?, live: LiveResult, ts: UInt64)? {
        guard let entry = entries[key], let current = entry.current else { return nil }
        return (current, entry.bodies[format], entry.live, timestamp(of: key.identity))
    }

    /// The timestamp the results of `identity`'s connection hold at: that of the last transition applied for it (0
    /// before the first).
    func timestamp(of identity: String) -> UInt64 {
        sessions[identity]?.ts ?? 0
    }

    /// The cached body (a value's JSON) of `snapshot` in `format`, while it is still current.
    func cachedBody(_ key: Key, current: CurrentResult, format: OutputFormat) -> [UInt8]? {
        guard let entry = entries[key], entry.current?.id == current.id else { return nil }
        return entry.bodies[format]
    }

    /// Keeps the rendered value of `current` in `format`, while it is still current.
    mutating func cache(_ body: [UInt8], key: Key, current: CurrentResult, format: OutputFormat) {
        guard entries[key]?.current?.id == current.id else { return }
        entries[key]!.bodies[format] = body
    }

    /// The one place the event bytes of `current`'s updates in `format` are kept while it is current (a new one if
    /// it is not current any more).
    mutating func frame(_ key: Key, current: CurrentResult, format: OutputFormat) -> FramedOnce {
        guard entries[key]?.current?.id == current.id else { return FramedOnce() }
        if let frame = entries[key]!.frames[format] { return frame }
        let frame = FramedOnce()
        entries[key]!.frames[format] = frame
        return frame
    }

    // MARK: Helpers

    /// Makes the entry of `key` unless there is one, charged to `owner`.
    private mutating func ensureEntry(_ key: Key, args: ConvexValue, owner: SubscriptionCaller, now: Duration)
        -> [Action]
    {
        guard entries[key] == nil else { return [] }
        let generation = nextGeneration
        nextGeneration += 1
        entries[key] = Entry(
            generation: generation, args: args, owner: owner,
            live: LiveResult(now: now, session: session(of: key.identity)))
        charged[owner, default: 0] += 1
        return [.subscribe(key, generation: generation, args: args)]
    }

    /// Removes `entry`, the entry of `key`, and its charge to its owner.
    private mutating func remove(_ key: Key, _ entry: Entry) {
        entries[key] = nil
        let left = charged[entry.owner, default: 1] - 1
        charged[entry.owner] = left > 0 ? left : nil
    }

    private mutating func session(of identity: String) -> SessionView {
        if let session = sessions[identity] { return session }
        let session = SessionView()
        sessions[identity] = session
        return session
    }

    private mutating func markIdleIfUnread(_ key: Key, now: Duration) {
        guard let entry = entries[key], !entry.hasReaders, entry.idleSince == nil else { return }
        entries[key]!.idleSince = now
    }

    private static func ending(_ entry: Entry) -> [Action] {
        var actions: [Action] = []
        if !entry.waiters.isEmpty { actions.append(.resume(waiters: Array(entry.waiters), with: nil)) }
        var seen: Set<ObjectIdentifier> = []
        let sinks = (entry.fanOut.sinks + entry.attachments.values.map(\.sink)).filter {
            seen.insert(ObjectIdentifier($0)).inserted
        }
        if !sinks.isEmpty { actions.append(.end(sinks)) }
        return actions
    }
}
