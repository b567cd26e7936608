import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization

/// Where one Server-Sent Event stream's events go. Implementations never block.
public protocol EventSink: AnyObject, Sendable {
    /// The output mode this stream renders values in.
    var format: OutputFormat { get }
    /// Queues an event. When `coalesce` is true and an earlier coalescable event has not been written yet, the new
    /// one replaces it: a query result is state, so a slow reader only ever needs the latest.
    func deliver(_ event: [UInt8], coalesce: Bool)
    /// Ends the stream cleanly (the client's `EventSource` reconnects).
    func finish()
}

/// One upstream subscription per (identity, function, canonical arguments), shared by every SSE stream on it and
/// answering `GET`s while it lives. It is reference-counted by its readers and kept warm for `keepWarm` after the
/// last one leaves, so a burst of `GET`s or a reconnecting `EventSource` does not resubscribe upstream.
public final class SubscriptionHub: Sendable {
    /// What identifies a shared subscription.
    public struct Key: Hashable, Sendable {
        /// An opaque identity key (a hash of the caller's credentials, or "" for anonymous callers).
        public var identity: String
        public var function: String
        /// Canonical Convex JSON of the arguments: sorted keys, exact numbers.
        public var canonicalArgs: [UInt8]

        public init(identity: String, function: UdfPath, args: ConvexValue) {
            self.identity = identity
            self.function = function.canonical
            self.canonicalArgs = args.convexJSON()
        }
    }

    /// The current result of a subscription with its event id.
    public struct Snapshot: Sendable {
        public var id: String
        public var result: UpstreamResult
    }

    public enum AttachError: Error, Sendable {
        case tooManySubscriptions
        case shuttingDown
    }

    private struct Attachment {
        var sink: any EventSink
        /// A `Last-Event-ID` hash to suppress the first event when the value has not changed since.
        var skipHash: UInt64?
    }

    private struct Entry {
        var generation: UInt64
        var args: ConvexValue
        var current: (snapshot: Snapshot, hash: UInt64)?
        var sequence: UInt64 = 0
        var attachments: [ObjectIdentifier: Attachment] = [:]
        var waiters: [UInt64: CheckedContinuation<Snapshot?, Never>] = [:]
        var readers = 0
        var lingerToken: UInt64 = 0
        /// The current result's revision and the last `GET` read, readable without the hub's lock.
        let live = LiveResult()
        var task: Task<Void, Never>?
        /// Rendered `GET` bodies and SSE events of `current`, by output mode.
        var bodies: [OutputFormat: [UInt8]] = [:]
        var events: [OutputFormat: [UInt8]] = [:]
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var nextID: UInt64 = 1
        var shutDown = false
    }

    private let state = Mutex(State())
    private let keepWarm: Duration
    private let maxSubscriptions: Int
    private let metrics: GatewayMetrics
    private let logger: Logger
    private let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]

    public init(
        keepWarm: Duration,
        maxSubscriptions: Int,
        metrics: GatewayMetrics,
        logger: Logger,
        render: @escaping @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    ) {
        self.keepWarm = keepWarm
        self.maxSubscriptions = maxSubscriptions
        self.metrics = metrics
        self.logger = logger
        self.render = render
    }

    public var subscriptionCount: Int { state.withLock { $0.entries.count } }

    // MARK: GET

    /// The current result of a live subscription, rendered, with the subscription's ``LiveResult``.
    public struct CurrentBody: Sendable {
        public var snapshot: Snapshot
        /// The rendered value (empty for a failure).
        public var body: [UInt8]
        public var live: LiveResult
    }

    /// The hot path: the rendered body of a live subscription's current result, without waiting. A read extends
    /// the subscription's keep-warm period.
    public func currentBody(for key: Key, format: OutputFormat) -> CurrentBody? {
        let found: (Snapshot, [UInt8]?, LiveResult)? = state.withLock { state in
            guard let entry = state.entries[key], let current = entry.current else { return nil }
            return (current.snapshot, entry.bodies[format], entry.live)
        }
        guard let (snapshot, cached, live) = found else { return nil }
        live.touch()
        if let cached { return CurrentBody(snapshot: snapshot, body: cached, live: live) }
        guard case .value(let value) = snapshot.result else { return CurrentBody(snapshot: snapshot, body: [], live: live) }
        let body = render(value, format)
        state.withLock { state in
            if state.entries[key]?.current?.snapshot.id == snapshot.id {
                state.entries[key]?.bodies[format] = body
            }
        }
        return CurrentBody(snapshot: snapshot, body: body, live: live)
    }

    /// The cold path: subscribes (or joins a subscription that has no result yet) and waits up to `timeout` for the
    /// first result; the subscription then stays warm for later requests. `nil` when no result came in time, or
    /// when the hub is at its subscription limit (the caller then makes a one-shot call).
    public func firstResult(
        for key: Key, args: ConvexValue, upstream: any ConvexUpstream, timeout: Duration
    ) async -> Snapshot? {
        let waiterID = state.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let timeoutTask = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.resumeWaiter(key: key, waiterID: waiterID, with: nil)
        }
        defer { timeoutTask.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Snapshot?, Never>) in
            let immediate: Snapshot?? = state.withLock { state in
                if state.shutDown { return .some(nil) }
                if let current = state.entries[key]?.current { return .some(current.snapshot) }
                if state.entries[key] == nil && state.entries.count >= maxSubscriptions { return .some(nil) }
                ensureEntry(&state, key: key, args: args, upstream: upstream)
                state.entries[key]!.waiters[waiterID] = continuation
                state.entries[key]!.readers += 1
                return .none
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    private func resumeWaiter(key: Key, waiterID: UInt64, with snapshot: Snapshot?) {
        let continuation = state.withLock { state -> CheckedContinuation<Snapshot?, Never>? in
            guard let continuation = state.entries[key]?.waiters.removeValue(forKey: waiterID) else { return nil }
            releaseReader(&state, key: key)
            return continuation
        }
        continuation?.resume(returning: snapshot)
    }

    // MARK: SSE

    /// Attaches a stream: it gets the current result at once (unless `lastEventID` shows the client already has
    /// it), then one event per change, until `detach`.
    public func attach(
        _ sink: any EventSink, to key: Key, args: ConvexValue, upstream: any ConvexUpstream, lastEventID: String?
    ) throws(AttachError) {
        let skipHash = lastEventID.flatMap(Self.hash(fromEventID:))
        let initial: (Snapshot, UInt64)? = try state.withLock { state throws(AttachError) in
            if state.shutDown { throw .shuttingDown }
            if state.entries[key] == nil && state.entries.count >= maxSubscriptions { throw .tooManySubscriptions }
            ensureEntry(&state, key: key, args: args, upstream: upstream)
            state.entries[key]!.readers += 1
            if let current = state.entries[key]!.current {
                state.entries[key]!.attachments[ObjectIdentifier(sink)] = Attachment(sink: sink, skipHash: nil)
                return current.hash == skipHash ? nil : (current.snapshot, current.hash)
            }
            state.entries[key]!.attachments[ObjectIdentifier(sink)] = Attachment(sink: sink, skipHash: skipHash)
            return nil
        }
        metrics.streamOpened()
        if let (snapshot, _) = initial {
            sink.deliver(event(for: key, snapshot: snapshot, format: sink.format), coalesce: true)
        }
    }

    public func detach(_ sink: any EventSink, from key: Key) {
        let removed = state.withLock { state -> Bool in
            guard state.entries[key]?.attachments.removeValue(forKey: ObjectIdentifier(sink)) != nil else { return false }
            releaseReader(&state, key: key)
            return true
        }
        if removed { metrics.streamClosed() }
    }

    /// Ends every stream and upstream subscription; later attaches fail with `.shuttingDown`.
    public func shutdown() {
        let (sinks, waiters, tasks) = state.withLock { state -> ([any EventSink], [CheckedContinuation<Snapshot?, Never>], [Task<Void, Never>]) in
            state.shutDown = true
            let entries = state.entries.values
            for entry in entries { entry.live.retire() }
            state.entries = [:]
            return (
                entries.flatMap { $0.attachments.values.map(\.sink) },
                entries.flatMap { $0.waiters.values },
                entries.compactMap(\.task)
            )
        }
        for task in tasks {
            task.cancel()
            metrics.upstreamSubscriptionRemoved()
        }
        for waiter in waiters { waiter.resume(returning: nil) }
        for sink in sinks {
            sink.finish()
            metrics.streamClosed()
        }
    }

    /// Whether any subscription still belongs to the identity with this opaque id.
    public func holdsSubscriptions(forIdentity id: String) -> Bool {
        state.withLock { state in state.entries.keys.contains { $0.identity == id } }
    }

    /// Sinks currently attached, for heartbeats.
    public func allSinks() -> [any EventSink] {
        state.withLock { state in state.entries.values.flatMap { $0.attachments.values.map(\.sink) } }
    }

    // MARK: Upstream side

    private func ensureEntry(_ state: inout State, key: Key, args: ConvexValue, upstream: any ConvexUpstream) {
        if state.entries[key] != nil {
            // A reader arrived during the keep-warm period: the pending expiry must not fire.
            state.entries[key]!.lingerToken &+= 1
            return
        }
        let generation = state.nextID
        state.nextID += 1
        var entry = Entry(generation: generation, args: args)
        let function = key.function
        entry.task = Task { [weak self] in
            for await result in upstream.subscribe(function, args: args) {
                guard let self else { return }
                self.receive(result, key: key, generation: generation)
            }
            self?.upstreamEnded(key: key, generation: generation)
        }
        state.entries[key] = entry
        metrics.upstreamSubscriptionAdded()
        logger.debug("upstream subscription opened", metadata: ["convex.function": "\(function)"])
    }

    private func receive(_ result: UpstreamResult, key: Key, generation: UInt64) {
        let hash = Self.hash(of: result)
        let delivery: (Snapshot, [CheckedContinuation<Snapshot?, Never>], [Attachment])? = state.withLock { state in
            guard var entry = state.entries[key], entry.generation == generation else { return nil }
            let waiters = Array(entry.waiters.values)
            entry.readers -= entry.waiters.count
            entry.waiters = [:]
            if let current = entry.current, current.hash == hash {
                state.entries[key] = entry
                scheduleExpiryIfIdle(&state, key: key)
                return (current.snapshot, waiters, [])
            }
            // Event ids grow with the wall clock in milliseconds, so they also grow across gateway restarts and
            // replicas; the hash part lets a reconnecting client skip a value it already has.
            let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
            entry.sequence = max(entry.sequence + 1, now)
            let snapshot = Snapshot(id: "\(entry.sequence)-\(String(hash, radix: 16))", result: result)
            entry.current = (snapshot, hash)
            entry.bodies = [:]
            entry.events = [:]
            entry.live.advance()
            var recipients: [Attachment] = []
            for (id, attachment) in entry.attachments {
                if let skip = attachment.skipHash {
                    entry.attachments[id]?.skipHash = nil
                    if skip == hash { continue }
                }
                recipients.append(attachment)
            }
            state.entries[key] = entry
            scheduleExpiryIfIdle(&state, key: key)
            return (snapshot, waiters, recipients)
        }
        guard let (snapshot, waiters, recipients) = delivery else { return }
        for waiter in waiters { waiter.resume(returning: snapshot) }
        var rendered: [OutputFormat: [UInt8]] = [:]
        for attachment in recipients {
            let format = attachment.sink.format
            let bytes: [UInt8]
            if let cached = rendered[format] {
                bytes = cached
            } else {
                bytes = event(for: key, snapshot: snapshot, format: format)
                rendered[format] = bytes
            }
            attachment.sink.deliver(bytes, coalesce: true)
        }
    }

    /// The upstream subscription ended without being cancelled (its connection was closed): streams end so that
    /// clients reconnect and resubscribe.
    private func upstreamEnded(key: Key, generation: UInt64) {
        let ended: (sinks: [any EventSink], waiters: [CheckedContinuation<Snapshot?, Never>])? = state.withLock { state in
            guard let entry = state.entries[key], entry.generation == generation else { return nil }
            state.entries[key] = nil
            entry.live.retire()
            return (entry.attachments.values.map(\.sink), Array(entry.waiters.values))
        }
        guard let ended else { return }
        metrics.upstreamSubscriptionRemoved()
        for waiter in ended.waiters { waiter.resume(returning: nil) }
        for sink in ended.sinks {
            sink.finish()
            metrics.streamClosed()
        }
    }

    private func releaseReader(_ state: inout State, key: Key) {
        guard state.entries[key] != nil else { return }
        state.entries[key]!.readers -= 1
        scheduleExpiryIfIdle(&state, key: key)
    }

    private func scheduleExpiryIfIdle(_ state: inout State, key: Key, after delay: Duration? = nil) {
        guard let entry = state.entries[key], entry.readers == 0 else { return }
        let token = entry.lingerToken &+ 1
        state.entries[key]!.lingerToken = token
        let delay = delay ?? keepWarm
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            self?.expire(key: key, token: token)
        }
    }

    private func expire(key: Key, token: UInt64) {
        let task = state.withLock { state -> Task<Void, Never>?? in
            guard let entry = state.entries[key], entry.readers == 0, entry.lingerToken == token else { return nil }
            let idle = entry.live.idleTime
            if idle < keepWarm {
                scheduleExpiryIfIdle(&state, key: key, after: keepWarm - idle)
                return nil
            }
            state.entries[key] = nil
            entry.live.retire()
            return .some(entry.task)
        }
        guard let task else { return }
        task?.cancel()
        metrics.upstreamSubscriptionRemoved()
        logger.debug("upstream subscription closed after keep-warm period", metadata: ["convex.function": "\(key.function)"])
    }

    // MARK: Rendering

    private func event(for key: Key, snapshot: Snapshot, format: OutputFormat) -> [UInt8] {
        if let cached = state.withLock({ $0.entries[key]?.current?.snapshot.id == snapshot.id ? $0.entries[key]?.events[format] : nil }) {
            return cached
        }
        let bytes: [UInt8]
        switch snapshot.result {
        case .value(let value):
            bytes = ServerSentEvent(id: snapshot.id, data: render(value, format)).encoded()
        case .failure(let failure):
            let body = failure.gatewayError.body { render($0, format) }
            bytes = ServerSentEvent(event: "error", id: snapshot.id, data: body).encoded()
        }
        state.withLock { state in
            if state.entries[key]?.current?.snapshot.id == snapshot.id {
                state.entries[key]?.events[format] = bytes
            }
        }
        return bytes
    }

    static func hash(of result: UpstreamResult) -> UInt64 {
        var hasher = FNV1a()
        switch result {
        case .value(let value):
            hasher.combine(0x01)
            hasher.combine(value.convexJSON())
        case .failure(let failure):
            hasher.combine(0x02)
            hasher.combine(Array(String(describing: failure).utf8))
        }
        return hasher.value
    }

    static func hash(fromEventID id: String) -> UInt64? {
        guard let dash = id.lastIndex(of: "-") else { return nil }
        return UInt64(id[id.index(after: dash)...], radix: 16)
    }
}

/// What the hot `GET` path needs of a subscription without taking the hub's lock: a revision that changes whenever
/// the current result does (0 before the first result), whether the subscription still lives, and when a `GET`
/// last read it (reads extend the keep-warm period).
public final class LiveResult: Sendable {
    /// 0: no result yet; `retired`: the subscription is gone; otherwise the current result's revision.
    private let state = Atomic<UInt64>(0)
    /// Nanoseconds since `epoch` of the last read.
    private let lastRead = Atomic<Int64>(LiveResult.nanosecondsSinceEpoch())

    private static let retired = UInt64.max
    private static let epoch = ContinuousClock.now

    private static func nanosecondsSinceEpoch(_ instant: ContinuousClock.Instant = .now) -> Int64 {
        let (seconds, attoseconds) = (instant - epoch).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The current result's revision: `nil` before the first result and once the subscription is gone.
    public var revision: UInt64? {
        let value = state.load(ordering: .acquiring)
        return value == 0 || value == Self.retired ? nil : value
    }

    /// Records a read at `instant` (now by default).
    public func touch(at instant: ContinuousClock.Instant = .now) {
        lastRead.store(Self.nanosecondsSinceEpoch(instant), ordering: .relaxed)
    }

    /// Time since the last read.
    var idleTime: Duration {
        .nanoseconds(Self.nanosecondsSinceEpoch() - lastRead.load(ordering: .relaxed))
    }

    /// A new current result (called under the hub's lock).
    func advance() {
        let value = state.load(ordering: .relaxed)
        if value != Self.retired { state.store(value + 1, ordering: .releasing) }
    }

    /// The subscription is gone for good (called under the hub's lock).
    func retire() {
        state.store(Self.retired, ordering: .releasing)
    }
}

/// 64-bit FNV-1a: a stable hash (unlike `Hasher`, the same in every process), so event ids stay comparable across
/// gateway restarts and replicas.
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x100_0000_01b3
    }

    mutating func combine(_ bytes: [UInt8]) {
        for b in bytes { combine(b) }
    }
}
