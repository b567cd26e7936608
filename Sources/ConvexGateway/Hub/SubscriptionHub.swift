import Convex
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization

/// One upstream subscription per (identity, function, canonical arguments), shared by every SSE stream on it and
/// answering `GET`s while it lives. It is kept warm for `keepWarm` after its last reader leaves or its last `GET`
/// reads it, so a burst of `GET`s or a reconnecting `EventSource` does not resubscribe upstream.
///
/// The decisions are ``HubState``'s (a state machine tested without I/O); this class holds it under a lock, carries
/// out its actions after leaving the lock (rendering, delivering, waking waiters), owns the upstream subscription
/// tasks, and runs the one sweeper that expires idle subscriptions.
package final class SubscriptionHub: Sendable {
    /// What identifies a shared subscription.
    package struct Key: Hashable, Sendable {
        /// An opaque identity key (a per-process id of the caller's credentials, or "" for anonymous callers).
        package var identity: String
        package var function: String
        /// Canonical Convex JSON of the arguments: sorted keys, exact numbers.
        package var canonicalArgs: [UInt8]

        package init(identity: String, function: UdfPath, args: ConvexValue) {
            self.identity = identity
            self.function = function.canonical
            self.canonicalArgs = args.convexJSON()
        }
    }

    /// The current result of a subscription with its event id.
    package struct Snapshot: Sendable {
        package var id: String
        /// Identifies the result: equal results have equal hashes.
        package var hash: UInt64
        package var result: UpstreamResult
    }

    package enum AttachError: Error, Sendable {
        case tooManySubscriptions
        case shuttingDown
    }

    private struct Locked {
        var hub: HubState
        /// The running upstream subscription of each entry, with the entry's generation.
        var tasks: [Key: (generation: UInt64, task: Task<Void, Never>)] = [:]
        var waiters: [UInt64: CheckedContinuation<Snapshot?, Never>] = [:]
        var nextWaiter: UInt64 = 1
    }

    private let state: Mutex<Locked>
    private let clock: GatewayClock
    private let metrics: GatewayMetrics
    private let logger: Logger
    private let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]

    package init(
        keepWarm: Duration,
        maxSubscriptions: Int,
        metrics: GatewayMetrics,
        logger: Logger,
        clock: GatewayClock = .continuous,
        render: @escaping @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    ) {
        state = Mutex(Locked(hub: HubState(keepWarm: keepWarm, maxSubscriptions: maxSubscriptions)))
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.render = render
    }

    package var subscriptionCount: Int { state.withLock { $0.hub.entries.count } }

    /// The hub clock's time (reads are stamped with it).
    package var now: Duration { clock.now }

    // MARK: GET

    /// The current result of a live subscription, rendered, with the subscription's ``LiveResult``.
    package struct CurrentBody: Sendable {
        package var snapshot: Snapshot
        /// The rendered value (empty for a failure).
        package var body: [UInt8]
        package var live: LiveResult
    }

    /// The hot path: the rendered body of a live subscription's current result, without waiting. A read extends
    /// the subscription's keep-warm period.
    package func currentBody(for key: Key, format: OutputFormat) -> CurrentBody? {
        guard let (snapshot, cached, live) = state.withLock({ $0.hub.current(key, format: format) }) else { return nil }
        live.touch(at: clock.now)
        if let cached { return CurrentBody(snapshot: snapshot, body: cached, live: live) }
        guard case .value(let value) = snapshot.result else {
            return CurrentBody(snapshot: snapshot, body: [], live: live)
        }
        let body = render(value, format)
        state.withLock { $0.hub.cache(body, key: key, snapshot: snapshot, format: format, isEvent: false) }
        return CurrentBody(snapshot: snapshot, body: body, live: live)
    }

    /// The cold path: subscribes (or joins a subscription that has no result yet) and waits up to `timeout` for the
    /// first result; the subscription then stays warm for later requests. `nil` when no result came in time, or
    /// when the hub is at its subscription limit (the caller then makes a one-shot call).
    package func firstResult(
        for key: Key, args: ConvexValue, upstream: any ConvexUpstream, timeout: Duration
    ) async -> Snapshot? {
        let waiter = state.withLock { locked in
            defer { locked.nextWaiter += 1 }
            return locked.nextWaiter
        }
        let deadline = clock.now + timeout
        let timeoutTask = Task { [weak self, clock] in
            try? await clock.sleep(until: deadline)
            guard !Task.isCancelled, let self else { return }
            let continuation = self.state.withLock { locked -> CheckedContinuation<Snapshot?, Never>? in
                guard locked.hub.stopWaiting(waiter, for: key, now: clock.now) else { return nil }
                return locked.waiters.removeValue(forKey: waiter)
            }
            continuation?.resume(returning: nil)
        }
        defer { timeoutTask.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Snapshot?, Never>) in
            let ready: Snapshot?? = state.withLock { locked in
                switch locked.hub.wait(waiter, for: key, args: args, now: clock.now) {
                case .ready(let snapshot):
                    return .some(snapshot)
                case .waiting(let actions):
                    locked.waiters[waiter] = continuation
                    startUpstream(actions, &locked, upstream: upstream)
                    return .none
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    // MARK: SSE

    /// Attaches a sink: it gets the current result at once (unless `skipHash` shows the client already has it),
    /// then one update per change, until `detach`.
    package func attach(
        _ sink: any EventSink, to key: Key, args: ConvexValue, upstream: any ConvexUpstream, skipHash: UInt64?
    ) throws(AttachError) {
        let initial = try state.withLock { locked throws(AttachError) -> Snapshot? in
            let (initial, actions) = try locked.hub.attach(
                sink, to: key, args: args, skipHash: skipHash, now: clock.now)
            startUpstream(actions, &locked, upstream: upstream)
            return initial
        }
        if let initial {
            sink.deliver(update(for: key, snapshot: initial, format: sink.format))
        }
    }

    package func detach(_ sink: any EventSink, from key: Key) {
        state.withLock { _ = $0.hub.detach(ObjectIdentifier(sink), from: key, now: clock.now) }
    }

    // MARK: Long-poll

    /// A long-poll `GET`: waits until the result of `key` differs from the one whose hash the client holds, up to
    /// `timeout` on the hub's clock, as an attached sink (so the subscription stays warm meanwhile, and is made again
    /// if it had expired). Detached whatever ends the wait.
    /// - Returns: the changed result rendered in `format`; `nil` when the wait ended without a change (the timeout,
    ///   the subscription's end, shutdown, or the subscription limit).
    package func nextChange(
        of key: Key, from heldHash: UInt64, args: ConvexValue, upstream: any ConvexUpstream, format: OutputFormat,
        timeout: Duration
    ) async -> SubscriptionUpdate? {
        // The deadline is read before the waiter is visible: the clock may move as soon as it is attached.
        let deadline = clock.now + timeout
        let waiter = ChangeWaiter(format: format, heldHash: heldHash)
        do {
            try attach(waiter, to: key, args: args, upstream: upstream, skipHash: heldHash)
        } catch {
            return nil
        }
        defer { detach(waiter, from: key) }
        let timer = Task { [clock] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            waiter.end(with: nil)
        }
        defer { timer.cancel() }
        // The request's task is cancelled when its client leaves: the wait ends, and the sink is detached.
        return await withTaskCancellationHandler {
            await waiter.outcome()
        } onCancel: {
            waiter.end(with: nil)
        }
    }

    /// Sinks attached now, over every subscription (streams and long-polls).
    var attachmentCount: Int {
        state.withLock { locked in locked.hub.entries.values.reduce(0) { $0 + $1.attachments.count } }
    }

    /// Ends every stream and upstream subscription; later attaches fail with `.shuttingDown`.
    package func shutdown() {
        let actions = state.withLock { locked in
            let actions = locked.hub.shutdown()
            stopUpstream(actions, &locked)
            return actions
        }
        perform(actions)
    }

    /// Whether any subscription still belongs to the identity with this opaque id.
    package func holdsSubscriptions(forIdentity id: String) -> Bool {
        state.withLock { locked in locked.hub.entries.keys.contains { $0.identity == id } }
    }

    // MARK: Keep-warm expiry

    /// Closes the subscriptions idle for the keep-warm period (one sweep).
    package func sweep() {
        let actions = state.withLock { locked in
            let actions = locked.hub.tick(now: clock.now)
            stopUpstream(actions, &locked)
            return actions
        }
        perform(actions)
    }

    /// The one sweeper: sweeps every quarter of the keep-warm period (10 ms to 1 s) until cancelled.
    package func runSweeper() async {
        let keepWarm = state.withLock { $0.hub.keepWarm }
        let interval = min(max(keepWarm / 4, .milliseconds(10)), .seconds(1))
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
            } catch {
                return
            }
            sweep()
        }
    }

    // MARK: Carrying out actions

    /// Starts the upstream subscriptions among `actions` (under the lock, so a later `unsubscribe` finds the task).
    private func startUpstream(_ actions: [HubState.Action], _ locked: inout Locked, upstream: any ConvexUpstream) {
        for case .subscribe(let key, let generation, let args) in actions {
            let function = key.function
            locked.tasks[key] = (
                generation,
                Task { [weak self] in
                    for await result in upstream.subscribe(function, args: args) {
                        guard let self else { return }
                        self.receive(result, key: key, generation: generation)
                    }
                    self?.upstreamEnded(key: key, generation: generation)
                }
            )
            metrics.upstreamSubscriptionAdded()
            logger.debug("upstream subscription opened", metadata: ["convex.function": "\(function)"])
        }
    }

    /// Cancels the upstream subscriptions among `actions` (under the lock).
    private func stopUpstream(_ actions: [HubState.Action], _ locked: inout Locked) {
        for case .unsubscribe(let key, let generation) in actions {
            guard let running = locked.tasks[key], running.generation == generation else { continue }
            locked.tasks[key] = nil
            running.task.cancel()
            metrics.upstreamSubscriptionRemoved()
            logger.debug("upstream subscription closed", metadata: ["convex.function": "\(key.function)"])
        }
    }

    /// Carries out the actions that happen outside the lock: waking waiters, delivering events, ending streams.
    private func perform(_ actions: [HubState.Action]) {
        for action in actions {
            switch action {
            case .subscribe, .unsubscribe:
                break  // carried out under the lock
            case .resume(let waiters, let snapshot):
                let continuations = state.withLock { locked in
                    waiters.compactMap { locked.waiters.removeValue(forKey: $0) }
                }
                for continuation in continuations { continuation.resume(returning: snapshot) }
            case .deliver(let snapshot, let previous, let key, let sinks):
                // Rendered once per output mode; the patch once per mode too, and only if a stream reads patches.
                var rendered: [OutputFormat: SubscriptionUpdate] = [:]
                var patched: Set<OutputFormat> = []
                for sink in sinks {
                    let format = sink.format
                    var update = rendered[format] ?? update(for: key, snapshot: snapshot, format: format)
                    if sink.wantsPatches, let previous, patched.insert(format).inserted {
                        update.patch = ValueDelta.patch(from: previous, to: snapshot, body: update.body) {
                            render($0, format)
                        }
                    }
                    rendered[format] = update
                    sink.deliver(update)
                }
            case .finish(let sinks):
                for sink in sinks { sink.finish() }
            }
        }
    }

    private func receive(_ result: UpstreamResult, key: Key, generation: UInt64) {
        let hash = Self.hash(of: result)
        let wallMilliseconds = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        let actions = state.withLock { locked in
            locked.hub.receive(
                result, hash: hash, key: key, generation: generation, wallMilliseconds: wallMilliseconds,
                now: clock.now)
        }
        perform(actions)
    }

    private func upstreamEnded(key: Key, generation: UInt64) {
        let actions = state.withLock { locked -> [HubState.Action] in
            let actions = locked.hub.upstreamEnded(key, generation: generation)
            if let running = locked.tasks[key], running.generation == generation {
                locked.tasks[key] = nil
                metrics.upstreamSubscriptionRemoved()
            }
            return actions
        }
        perform(actions)
    }

    // MARK: Rendering

    /// `snapshot` rendered in `format`: the body and the single-subscription event, each rendered once while the
    /// snapshot is current.
    private func update(for key: Key, snapshot: Snapshot, format: OutputFormat) -> SubscriptionUpdate {
        let cached = state.withLock { locked in
            (
                body: locked.hub.cachedBody(key, snapshot: snapshot, format: format),
                event: locked.hub.cachedEvent(key, snapshot: snapshot, format: format)
            )
        }
        let body: [UInt8]
        let isFailure: Bool
        switch snapshot.result {
        case .value(let value):
            body = cached.body ?? render(value, format)
            isFailure = false
            if cached.body == nil {
                state.withLock { $0.hub.cache(body, key: key, snapshot: snapshot, format: format, isEvent: false) }
            }
        case .failure(let failure):
            body = failure.gatewayError.body { render($0, format) }
            isFailure = true
        }
        let event: [UInt8]
        if let cachedEvent = cached.event {
            event = cachedEvent
        } else {
            event = ServerSentEvent(event: isFailure ? "error" : nil, id: snapshot.id, data: body).encoded()
            state.withLock { $0.hub.cache(event, key: key, snapshot: snapshot, format: format, isEvent: true) }
        }
        return SubscriptionUpdate(snapshot: snapshot, hash: snapshot.hash, body: body, event: event)
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
