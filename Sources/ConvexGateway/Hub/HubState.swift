import ConvexValues

/// The subscription hub's bookkeeping as a plain state machine: each event (a stream attaching or leaving, a `GET`
/// waiting for a first result, an upstream transition, the upstream ending, the sweeper's tick, shutdown) updates the
/// state and returns the actions its owner, ``SubscriptionHub``, carries out. No I/O and no clock: time comes in as
/// `now`, the hub clock's reading (``GatewayClock/now``).
///
/// Results come one upstream transition at a time, and a stream gets the changes one transition made to its
/// subscriptions as one delivery: a stream never holds a mix of two snapshots of the database.
struct HubState {
    typealias Key = SubscriptionHub.Key
    typealias CurrentResult = SubscriptionHub.CurrentResult
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
        /// streams get a change as part of one ``FanOut``.
        var alone: Bool
    }

    struct AttachmentID: Hashable {
        var sink: ObjectIdentifier
        var member: Int
    }

    /// The changes one upstream transition (or a stream's start) brings one stream, in the order of its members.
    struct Delivery {
        struct Change {
            var member: Int
            var key: Key
            var current: CurrentResult
            /// The result it replaces (what a JSON Patch is made against).
            var previous: CurrentResult?
        }

        /// The Convex timestamp of the snapshot the results come from.
        var ts: UInt64
        var changes: [Change]
    }

    /// One change for every stream whose only subscription it is: they all get the same one-change delivery (member
    /// 0), so a change that reaches 10,000 such streams is one action with one delivery, not 10,000 of each.
    struct FanOut {
        var delivery: Delivery
        var sinks: [any EventSink]
    }

    /// One upstream result of one entry, as a transition brings it.
    struct Change {
        var key: Key
        var generation: UInt64
        var result: UpstreamResult
        /// Identifies the result: equal results have equal hashes.
        var hash: UInt64
    }

    struct Entry {
        let generation: UInt64
        let args: ConvexValue
        var current: CurrentResult?
        var sequence: UInt64 = 0
        var attachments: [AttachmentID: Attachment] = [:]
        var waiters: Set<UInt64> = []
        /// When the last reader left; `nil` while streams or waiting `GET`s read it.
        var idleSince: Duration?
        /// The current result's revision and the last `GET` read, readable without the hub's lock.
        let live: LiveResult
        /// Rendered `GET` bodies and SSE events of `current`, by output mode.
        var bodies: [OutputFormat: [UInt8]] = [:]
        var events: [OutputFormat: [UInt8]] = [:]

        var hasReaders: Bool { !attachments.isEmpty || !waiters.isEmpty }
    }

    enum Action {
        /// Open the upstream subscription of a new entry.
        case subscribe(Key, generation: UInt64, args: ConvexValue)
        /// Close an entry's upstream subscription.
        case unsubscribe(Key, generation: UInt64)
        /// Wake waiting `GET`s with a result and the timestamp it holds at (`nil`: none will come).
        case resume(waiters: [UInt64], with: (current: CurrentResult, ts: UInt64)?)
        /// Send a stream the changes of one transition, at once.
        case deliver(Delivery, to: any EventSink)
        /// Send each of `sinks` the same delivery of one change (streams of that one subscription).
        case fanOut(FanOut)
        /// End streams (the upstream ended, or the hub shut down).
        case end([any EventSink])
    }

    /// How a `GET`'s wait for a first result begins.
    enum WaitStart {
        /// Answered at once: the current result and the timestamp it holds at, or `nil` (shutting down, or at the
        /// subscription limit).
        case ready((current: CurrentResult, ts: UInt64)?)
        /// Waiting; carry out the actions (a new upstream subscription).
        case waiting([Action])
    }

    let keepWarm: Duration
    let maxSubscriptions: Int
    private(set) var entries: [Key: Entry] = [:]
    /// Per identity (one upstream connection), the timestamp of the last transition: the snapshot its entries hold.
    private(set) var sessions: [String: SessionView] = [:]
    private var nextGeneration: UInt64 = 1
    private(set) var isShutDown = false

    init(keepWarm: Duration, maxSubscriptions: Int) {
        self.keepWarm = keepWarm
        self.maxSubscriptions = maxSubscriptions
    }

    // MARK: Readers

    /// A stream attaches its subscriptions (all of one identity). It gets `initial` at once: the current result of
    /// every member that has one (unless its `held` hash shows the client has it), all from one snapshot; a member
    /// without a result yet joins in the first transition that carries it.
    mutating func attach(
        _ sink: any EventSink, members: [Member], now: Duration
    ) throws(SubscriptionHub.AttachError) -> (initial: Delivery?, actions: [Action]) {
        if isShutDown { throw .shuttingDown }
        let newKeys = Set(members.map(\.key)).filter { entries[$0] == nil }
        if !newKeys.isEmpty && entries.count + newKeys.count > maxSubscriptions { throw .tooManySubscriptions }
        var actions: [Action] = []
        var initial: [Delivery.Change] = []
        let stream = ObjectIdentifier(sink)
        for (index, member) in members.enumerated() {
            actions += ensureEntry(member.key, args: member.args, now: now)
            let current = entries[member.key]!.current
            entries[member.key]!.attachments[AttachmentID(sink: stream, member: index)] = Attachment(
                sink: sink, member: index, held: current == nil ? member.held : nil, alone: members.count == 1)
            entries[member.key]!.idleSince = nil
            if let current, current.hash != member.held {
                initial.append(
                    Delivery.Change(member: index, key: member.key, current: current, previous: nil))
            }
        }
        guard !initial.isEmpty, let identity = members.first?.key.identity else { return (nil, actions) }
        return (Delivery(ts: timestamp(of: identity), changes: initial), actions)
    }

    /// A stream leaves (`members`: the keys of its subscriptions, in order). Returns whether it was attached.
    mutating func detach(_ sink: ObjectIdentifier, members: [Key], now: Duration) -> Bool {
        var wasAttached = false
        for (index, key) in members.enumerated() {
            guard entries[key]?.attachments.removeValue(forKey: AttachmentID(sink: sink, member: index)) != nil else {
                continue
            }
            wasAttached = true
            markIdleIfUnread(key, now: now)
        }
        return wasAttached
    }

    /// A `GET` waits for the first result of `key`, subscribing upstream if nothing does yet.
    mutating func wait(_ waiter: UInt64, for key: Key, args: ConvexValue, now: Duration) -> WaitStart {
        if isShutDown { return .ready(nil) }
        if let current = entries[key]?.current { return .ready((current, timestamp(of: key.identity))) }
        if entries[key] == nil && entries.count >= maxSubscriptions { return .ready(nil) }
        let actions = ensureEntry(key, args: args, now: now)
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

    // MARK: Upstream

    /// An upstream transition of the connection of `identity`: the new results of some entries (a change of an
    /// entry of another generation is ignored). `wallMilliseconds` (the wall clock) keeps event ids growing across
    /// gateway restarts and replicas. Each stream gets one delivery with every change of its subscriptions.
    mutating func receive(
        ts: UInt64, identity: String, changes: [Change], wallMilliseconds: UInt64, now: Duration
    ) -> [Action] {
        var actions: [Action] = []
        defer { session(of: identity).advance(to: ts) }
        var deliveries: [ObjectIdentifier: (sink: any EventSink, delivery: Delivery)] = [:]
        var order: [ObjectIdentifier] = []
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
            entry.sequence = max(entry.sequence + 1, wallMilliseconds)
            let current = CurrentResult(
                id: ResumeID(version: entry.sequence, held: [change.hash]).text, sequence: entry.sequence,
                hash: change.hash,
                result: change.result)
            entry.current = current
            entry.bodies = [:]
            entry.events = [:]
            entry.live.advance()
            var alone: [any EventSink] = []
            alone.reserveCapacity(entry.attachments.count)
            for (id, attachment) in entry.attachments {
                if let held = attachment.held {
                    entry.attachments[id]?.held = nil
                    if held == change.hash { continue }
                }
                if attachment.alone {
                    alone.append(attachment.sink)
                    continue
                }
                let stream = id.sink
                if deliveries[stream] == nil {
                    deliveries[stream] = (attachment.sink, Delivery(ts: ts, changes: []))
                    order.append(stream)
                }
                deliveries[stream]!.delivery.changes.append(
                    Delivery.Change(member: attachment.member, key: key, current: current, previous: previous))
            }
            if !alone.isEmpty {
                let only = Delivery.Change(member: 0, key: key, current: current, previous: previous)
                fanOuts.append(.fanOut(FanOut(delivery: Delivery(ts: ts, changes: [only]), sinks: alone)))
            }
            entries[key] = entry
            markIdleIfUnread(key, now: now)
            if !waiters.isEmpty { actions.append(.resume(waiters: Array(waiters), with: (current, ts))) }
        }
        actions += fanOuts
        for stream in order {
            var (sink, delivery) = deliveries[stream]!
            delivery.changes.sort { $0.member < $1.member }
            actions.append(.deliver(delivery, to: sink))
        }
        return actions
    }

    /// The upstream subscription ended without being cancelled (its connection closed): streams end so that their
    /// clients reconnect and resubscribe, and waiting `GET`s get no result.
    mutating func upstreamEnded(_ key: Key, generation: UInt64) -> [Action] {
        guard let entry = entries[key], entry.generation == generation else { return [] }
        entries[key] = nil
        entry.live.retire()
        return Self.ending(entry)
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
            entries[key] = nil
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

    /// The cached SSE event of `snapshot` in `format`, while it is still current.
    func cachedEvent(_ key: Key, current: CurrentResult, format: OutputFormat) -> [UInt8]? {
        guard let entry = entries[key], entry.current?.id == current.id else { return nil }
        return entry.events[format]
    }

    /// Keeps a rendered body (`isEvent`: an SSE event) of `snapshot`, while it is still current.
    mutating func cache(_ bytes: [UInt8], key: Key, current: CurrentResult, format: OutputFormat, isEvent: Bool) {
        guard entries[key]?.current?.id == current.id else { return }
        if isEvent {
            entries[key]!.events[format] = bytes
        } else {
            entries[key]!.bodies[format] = bytes
        }
    }

    // MARK: Helpers

    private mutating func ensureEntry(_ key: Key, args: ConvexValue, now: Duration) -> [Action] {
        guard entries[key] == nil else { return [] }
        let generation = nextGeneration
        nextGeneration += 1
        entries[key] = Entry(
            generation: generation, args: args, live: LiveResult(now: now, session: session(of: key.identity)))
        return [.subscribe(key, generation: generation, args: args)]
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
        let sinks = entry.attachments.values.map(\.sink).filter { seen.insert(ObjectIdentifier($0)).inserted }
        if !sinks.isEmpty { actions.append(.end(sinks)) }
        return actions
    }
}
