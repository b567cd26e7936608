import ConvexValues

/// The subscription hub's bookkeeping as a plain state machine: each event (a stream attaching or leaving, a `GET`
/// waiting for a first result, an upstream result, the upstream ending, the sweeper's tick, shutdown) updates the
/// state and returns the actions its owner, ``SubscriptionHub``, carries out. No I/O and no clock: time comes in as
/// `now`, the hub clock's reading (``GatewayClock/now``).
struct HubState {
    typealias Key = SubscriptionHub.Key
    typealias Snapshot = SubscriptionHub.Snapshot

    struct Attachment {
        var sink: any EventSink
        /// A `Last-Event-ID` hash to suppress the first event when the value has not changed since.
        var skipHash: UInt64?
    }

    struct Entry {
        let generation: UInt64
        let args: ConvexValue
        var current: (snapshot: Snapshot, hash: UInt64)?
        var sequence: UInt64 = 0
        var attachments: [ObjectIdentifier: Attachment] = [:]
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
        /// Wake waiting `GET`s with a result (`nil`: none will come).
        case resume(waiters: [UInt64], with: Snapshot?)
        /// Send a new result to streams; `previous` is the result it replaces (what a JSON Patch is made against).
        case deliver(Snapshot, previous: Snapshot?, key: Key, to: [any EventSink])
        /// End streams (the upstream ended, or the hub shut down).
        case finish([any EventSink])
    }

    /// How a `GET`'s wait for a first result begins.
    enum WaitStart {
        /// Answered at once: the current result, or `nil` (shutting down, or at the subscription limit).
        case ready(Snapshot?)
        /// Waiting; carry out the actions (a new upstream subscription).
        case waiting([Action])
    }

    let keepWarm: Duration
    let maxSubscriptions: Int
    private(set) var entries: [Key: Entry] = [:]
    private var nextGeneration: UInt64 = 1
    private(set) var isShutDown = false

    init(keepWarm: Duration, maxSubscriptions: Int) {
        self.keepWarm = keepWarm
        self.maxSubscriptions = maxSubscriptions
    }

    // MARK: Readers

    /// A stream attaches. It gets `initial` at once (unless its `Last-Event-ID` hash shows it has the current value),
    /// then every change.
    mutating func attach(
        _ sink: any EventSink, to key: Key, args: ConvexValue, skipHash: UInt64?, now: Duration
    ) throws(SubscriptionHub.AttachError) -> (initial: Snapshot?, actions: [Action]) {
        if isShutDown { throw .shuttingDown }
        if entries[key] == nil && entries.count >= maxSubscriptions { throw .tooManySubscriptions }
        let actions = ensureEntry(key, args: args, now: now)
        let current = entries[key]!.current
        entries[key]!.attachments[ObjectIdentifier(sink)] = Attachment(
            sink: sink, skipHash: current == nil ? skipHash : nil)
        entries[key]!.idleSince = nil
        guard let current, current.hash != skipHash else { return (nil, actions) }
        return (current.snapshot, actions)
    }

    /// A stream leaves. Returns whether it was attached.
    mutating func detach(_ sink: ObjectIdentifier, from key: Key, now: Duration) -> Bool {
        guard entries[key]?.attachments.removeValue(forKey: sink) != nil else { return false }
        markIdleIfUnread(key, now: now)
        return true
    }

    /// A `GET` waits for the first result of `key`, subscribing upstream if nothing does yet.
    mutating func wait(_ waiter: UInt64, for key: Key, args: ConvexValue, now: Duration) -> WaitStart {
        if isShutDown { return .ready(nil) }
        if let current = entries[key]?.current { return .ready(current.snapshot) }
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

    /// A result of the upstream subscription `generation` of `key`; `hash` identifies it, `wallMilliseconds` (the
    /// wall clock) keeps event ids growing across gateway restarts and replicas.
    mutating func receive(
        _ result: UpstreamResult, hash: UInt64, key: Key, generation: UInt64, wallMilliseconds: UInt64, now: Duration
    ) -> [Action] {
        guard var entry = entries[key], entry.generation == generation else { return [] }
        var actions: [Action] = []
        let waiters = entry.waiters
        entry.waiters = []
        if let current = entry.current, current.hash == hash {
            if !waiters.isEmpty { actions.append(.resume(waiters: Array(waiters), with: current.snapshot)) }
            entries[key] = entry
            markIdleIfUnread(key, now: now)
            return actions
        }
        let previous = entry.current?.snapshot
        entry.sequence = max(entry.sequence + 1, wallMilliseconds)
        let snapshot = Snapshot(id: "\(entry.sequence)-\(String(hash, radix: 16))", hash: hash, result: result)
        entry.current = (snapshot, hash)
        entry.bodies = [:]
        entry.events = [:]
        entry.live.advance()
        var recipients: [any EventSink] = []
        for (id, attachment) in entry.attachments {
            if let skip = attachment.skipHash {
                entry.attachments[id]?.skipHash = nil
                if skip == hash { continue }
            }
            recipients.append(attachment.sink)
        }
        entries[key] = entry
        markIdleIfUnread(key, now: now)
        if !waiters.isEmpty { actions.append(.resume(waiters: Array(waiters), with: snapshot)) }
        if !recipients.isEmpty { actions.append(.deliver(snapshot, previous: previous, key: key, to: recipients)) }
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

    /// The current result of `key` with what is cached of its rendering in `format`.
    func current(_ key: Key, format: OutputFormat) -> (snapshot: Snapshot, body: [UInt8]?, live: LiveResult)? {
        guard let entry = entries[key], let current = entry.current else { return nil }
        return (current.snapshot, entry.bodies[format], entry.live)
    }

    /// The cached body (a value's JSON) of `snapshot` in `format`, while it is still current.
    func cachedBody(_ key: Key, snapshot: Snapshot, format: OutputFormat) -> [UInt8]? {
        guard let entry = entries[key], entry.current?.snapshot.id == snapshot.id else { return nil }
        return entry.bodies[format]
    }

    /// The cached SSE event of `snapshot` in `format`, while it is still current.
    func cachedEvent(_ key: Key, snapshot: Snapshot, format: OutputFormat) -> [UInt8]? {
        guard let entry = entries[key], entry.current?.snapshot.id == snapshot.id else { return nil }
        return entry.events[format]
    }

    /// Keeps a rendered body (`isEvent`: an SSE event) of `snapshot`, while it is still current.
    mutating func cache(_ bytes: [UInt8], key: Key, snapshot: Snapshot, format: OutputFormat, isEvent: Bool) {
        guard entries[key]?.current?.snapshot.id == snapshot.id else { return }
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
        entries[key] = Entry(generation: generation, args: args, live: LiveResult(now: now))
        return [.subscribe(key, generation: generation, args: args)]
    }

    private mutating func markIdleIfUnread(_ key: Key, now: Duration) {
        guard let entry = entries[key], !entry.hasReaders, entry.idleSince == nil else { return }
        entries[key]!.idleSince = now
    }

    private static func ending(_ entry: Entry) -> [Action] {
        var actions: [Action] = []
        if !entry.waiters.isEmpty { actions.append(.resume(waiters: Array(entry.waiters), with: nil)) }
        let sinks = entry.attachments.values.map(\.sink)
        if !sinks.isEmpty { actions.append(.finish(sinks)) }
        return actions
    }
}
