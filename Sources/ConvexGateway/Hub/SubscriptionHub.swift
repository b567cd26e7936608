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

    /// A subscription's current result, with its event id.
    package struct CurrentResult: Sendable {
        /// `<sequence>-<hash in hex>`: the resume id of a one-subscription stream holding this result.
        package var id: String
        /// Grows with every change of the subscription (and with the wall clock, across restarts).
        package var sequence: UInt64
        /// Identifies the result: equal results have equal hashes.
        package var hash: UInt64
        package var result: UpstreamResult
    }

    /// One subscription of a stream, as it attaches.
    package struct Member: Sendable {
        package var key: Key
        package var args: ConvexValue
        /// The hash of the result the client holds (from its `Last-Event-ID`): not sent again while it is current.
        package var held: UInt64?

        package init(key: Key, args: ConvexValue, held: UInt64? = nil) {
            self.key = key
            self.args = args
            self.held = held
        }
    }

    package enum AttachError: Error, Sendable {
        case tooManySubscriptions
        case shuttingDown
    }

    /// The upstream query set of one identity, with the task that reads its transitions.
    private struct QuerySet {
        let generation: UInt64
        let set: any UpstreamQuerySet
        var task: Task<Void, Never>?
        /// The entry of each member token (the entry's generation).
        var members: [UInt64: Key] = [:]
    }

    private struct Locked {
        var hub: HubState
        /// Per identity, the query set that holds its entries' upstream subscriptions.
        var querySets: [String: QuerySet] = [:]
        var nextQuerySet: UInt64 = 1
        /// Callers of ``firstResult(for:args:upstream:timeout:)`` waiting for a subscription's first result.
        var waiters: [UInt64: OneShot<(current: CurrentResult, ts: UInt64)?>] = [:]
        var nextWaiter: UInt64 = 1
        /// Callers of ``reach(_:identity:upstream:timeout:)`` waiting for an identity's results to hold at a timestamp.
        var sessionWaiters: [UInt64: SessionWaiter] = [:]
    }

    private struct SessionWaiter {
        let identity: String
        let target: UInt64
        let wait: OneShot<Bool>
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
        package var current: CurrentResult
        /// The rendered value (empty for a failure).
        package var body: [UInt8]
        package var live: LiveResult
        /// The Convex timestamp of the snapshot the result holds at (its connection's last transition).
        package var ts: UInt64
    }

    /// The hot path: the rendered body of a live subscription's current result, without waiting. A read extends
    /// the subscription's keep-warm period.
    package func currentBody(for key: Key, format: OutputFormat) -> CurrentBody? {
        guard let (current, cached, live, ts) = state.withLock({ $0.hub.current(key, format: format) }) else {
            return nil
        }
        live.touch(at: clock.now)
        if let cached { return CurrentBody(current: current, body: cached, live: live, ts: ts) }
        guard case .value(let value) = current.result else {
            return CurrentBody(current: current, body: [], live: live, ts: ts)
        }
        let body = render(value, format)
        state.withLock { $0.hub.cache(body, key: key, current: current, format: format, isEvent: false) }
        return CurrentBody(current: current, body: body, live: live, ts: ts)
    }

    /// The cold path: subscribes (or joins a subscription that has no result yet) and waits up to `timeout` for the
    /// first result; the subscription then stays warm for later requests. Returns the result with the timestamp of the
    /// snapshot it holds at; `nil` when no result came in time, or when the hub is at its subscription limit (the
    /// caller then makes a one-shot call).
    package func firstResult(
        for key: Key, args: ConvexValue, upstream: any ConvexUpstream, timeout: Duration
    ) async -> (current: CurrentResult, ts: UInt64)? {
        let deadline = clock.now + timeout
        let wait = OneShot<(current: CurrentResult, ts: UInt64)?>()
        let (waiter, ready) = state.withLock { locked -> (UInt64, (current: CurrentResult, ts: UInt64)?) in
            let waiter = locked.nextWaiter
            locked.nextWaiter += 1
            switch locked.hub.wait(waiter, for: key, args: args, now: clock.now) {
            case .ready(let current):
                return (waiter, current)
            case .waiting(let actions):
                locked.waiters[waiter] = wait
                startUpstream(actions, &locked, upstream: upstream)
                return (waiter, nil)
            }
        }
        if let ready { return ready }
        // Started once the wait is registered, so that a deadline already reached still ends it.
        let timer = clock.expiring(at: deadline) { [weak self, clock] in
            guard let self else { return }
            let expired = self.state.withLock { locked in
                locked.hub.stopWaiting(waiter, for: key, now: clock.now)
                    ? locked.waiters.removeValue(forKey: waiter) : nil
            }
            expired?.end(with: nil)
        }
        defer { timer.cancel() }
        return await wait.value()
    }

    // MARK: SSE

    /// Attaches a stream's subscriptions (all of one identity, on `upstream`): the stream gets the current result of
    /// every member at once, all from one snapshot (except those whose `held` hash shows the client has it), then one
    /// delivery per upstream transition that changes any of them, until `detach`.
    package func attach(
        _ sink: any EventSink, members: [Member], upstream: any ConvexUpstream
    ) throws(AttachError) {
        let initial = try state.withLock { locked throws(AttachError) -> HubState.Delivery? in
            let (initial, actions) = try locked.hub.attach(sink, members: members, now: clock.now)
            startUpstream(actions, &locked, upstream: upstream)
            return initial
        }
        if let initial { perform([.deliver(initial, to: sink)]) }
    }

    /// Detaches a stream; `members` are the keys of its subscriptions, in the order they were attached.
    package func detach(_ sink: any EventSink, members: [Key]) {
        state.withLock { _ = $0.hub.detach(ObjectIdentifier(sink), members: members, now: clock.now) }
    }

    // MARK: Long-poll

    /// A long-poll `GET`: waits until the result of `key` differs from the one whose hash the client holds, up to
    /// `timeout` on the hub's clock, as an attached sink (so the subscription stays warm meanwhile, and is made again
    /// if it had expired). Detached whatever ends the wait.
    /// - Returns: the changed result rendered in `format`, with the timestamp of the snapshot it comes from; `nil` when
    ///   the wait ended without a change (the timeout, the subscription's end, shutdown, or the subscription limit).
    package func nextChange(
        of key: Key, from held: UInt64, args: ConvexValue, upstream: any ConvexUpstream, format: OutputFormat,
        timeout: Duration
    ) async -> (update: SubscriptionUpdate, ts: UInt64)? {
        await nextChange(
            of: [Member(key: key, args: args, held: held)], upstream: upstream, format: format, timeout: timeout)
    }

    /// A long-poll of many subscriptions (of one identity): waits until the result of any member differs from the one
    /// whose hash its `held` names. As ``nextChange(of:from:args:upstream:format:timeout:)``; returns the first
    /// changed result.
    package func nextChange(
        of members: [Member], upstream: any ConvexUpstream, format: OutputFormat, timeout: Duration
    ) async -> (update: SubscriptionUpdate, ts: UInt64)? {
        // The deadline is read before the waiter is visible: the clock may move as soon as it is attached.
        let deadline = clock.now + timeout
        let waiter = ChangeWaiter(format: format, held: members.map { $0.held ?? 0 })
        do {
            try attach(waiter, members: members, upstream: upstream)
        } catch {
            return nil
        }
        defer { detach(waiter, members: members.map(\.key)) }
        let timer = clock.expiring(at: deadline) { waiter.end(with: nil) }
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

    /// The current results of `keys` (all of one identity), rendered in `format`, all read at once: one snapshot, at
    /// the returned timestamp. `nil` unless every key has a current result. A read extends each keep-warm period.
    package func currentBodies(for keys: [Key], format: OutputFormat) -> (ts: UInt64, bodies: [CurrentBody])? {
        let read = state.withLock { locked -> (UInt64, [(CurrentResult, [UInt8]?, LiveResult)])? in
            var results: [(CurrentResult, [UInt8]?, LiveResult)] = []
            for key in keys {
                guard let (current, body, live, _) = locked.hub.current(key, format: format) else { return nil }
                results.append((current, body, live))
            }
            return (locked.hub.timestamp(of: keys.first?.identity ?? ""), results)
        }
        guard let (ts, results) = read else { return nil }
        let now = clock.now
        var bodies: [CurrentBody] = []
        for (key, (current, cached, live)) in zip(keys, results) {
            live.touch(at: now)
            var body = cached ?? []
            if cached == nil, case .value(let value) = current.result {
                body = render(value, format)
                state.withLock { $0.hub.cache(body, key: key, current: current, format: format, isEvent: false) }
            }
            bodies.append(CurrentBody(current: current, body: body, live: live, ts: ts))
        }
        return (ts, bodies)
    }

    // MARK: Read-your-writes

    /// The timestamp the hub's results of `identity`'s connection hold at (0 before its first transition).
    package func sessionTimestamp(of identity: String) -> UInt64 {
        state.withLock { $0.hub.timestamp(of: identity) }
    }

    /// Makes the results the hub serves for `identity` hold at `target` or later, within `timeout`: the connection is
    /// asked to move its view there (``ConvexUpstream/waitForView(atLeast:timeout:)``), and when the hub holds
    /// subscriptions of it, the hub waits for the transition that moved it. Returns whether `target` was reached.
    package func reach(
        _ target: UInt64, identity: String, upstream: any ConvexUpstream, timeout: Duration
    ) async -> Bool {
        if sessionTimestamp(of: identity) >= target { return true }
        let deadline = clock.now + timeout
        guard await upstream.waitForView(atLeast: target, timeout: timeout) >= target else { return false }
        let wait = OneShot<Bool>()
        let (waiter, reached) = state.withLock { locked -> (UInt64, Bool?) in
            let waiter = locked.nextWaiter
            locked.nextWaiter += 1
            // With no subscription of the identity, its next ones start from the connection's view.
            guard locked.querySets[identity] != nil else { return (waiter, true) }
            if locked.hub.timestamp(of: identity) >= target { return (waiter, true) }
            if locked.hub.isShutDown { return (waiter, false) }
            locked.sessionWaiters[waiter] = SessionWaiter(identity: identity, target: target, wait: wait)
            return (waiter, nil)
        }
        if let reached { return reached }
        // Started once the wait is registered: the connection's wait may have used up most of the time.
        let timer = clock.expiring(at: deadline) { [weak self] in
            self?.state.withLock { $0.sessionWaiters.removeValue(forKey: waiter) }?.wait.end(with: false)
        }
        defer { timer.cancel() }
        return await wait.value()
    }

    /// The session waiters of `identity` whose target the hub's results reached (all of them with `ended`), removed.
    private static func sessionWaitersDone(_ identity: String, ended: Bool, _ locked: inout Locked) -> [SessionWaiter] {
        guard !locked.sessionWaiters.isEmpty else { return [] }
        let ts = locked.hub.timestamp(of: identity)
        var done: [SessionWaiter] = []
        for (id, waiter) in locked.sessionWaiters where waiter.identity == identity && (ended || waiter.target <= ts) {
            locked.sessionWaiters[id] = nil
            done.append(waiter)
        }
        return done
    }

    /// Ends every stream and upstream subscription; later attaches fail with `.shuttingDown`.
    package func shutdown() {
        let (actions, waiting) = state.withLock { locked in
            let actions = locked.hub.shutdown()
            stopUpstream(actions, &locked)
            defer { locked.sessionWaiters = [:] }
            return (actions, Array(locked.sessionWaiters.values))
        }
        perform(actions)
        for waiter in waiting { waiter.wait.end(with: false) }
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

    /// Adds the upstream subscriptions among `actions` to their identity's query set, made (with the task that reads
    /// it) if the identity has none (under the lock, so a later `unsubscribe` finds the member).
    private func startUpstream(_ actions: [HubState.Action], _ locked: inout Locked, upstream: any ConvexUpstream) {
        for case .subscribe(let key, let generation, let args) in actions {
            let identity = key.identity
            if locked.querySets[identity] == nil {
                let setGeneration = locked.nextQuerySet
                locked.nextQuerySet += 1
                let set = upstream.makeQuerySet()
                var querySet = QuerySet(generation: setGeneration, set: set)
                querySet.task = Task { [weak self] in
                    for await transition in set.transitions {
                        guard let self else { return }
                        self.receive(transition, identity: identity, querySet: setGeneration)
                    }
                    self?.querySetEnded(identity: identity, generation: setGeneration)
                }
                locked.querySets[identity] = querySet
            }
            locked.querySets[identity]!.members[generation] = key
            locked.querySets[identity]!.set.add(generation, key.function, args: args)
            metrics.upstreamSubscriptionAdded()
            logger.debug("upstream subscription opened", metadata: ["convex.function": "\(key.function)"])
        }
    }

    /// Removes the upstream subscriptions among `actions` from their query sets; a set left empty is closed (under
    /// the lock).
    private func stopUpstream(_ actions: [HubState.Action], _ locked: inout Locked) {
        for case .unsubscribe(let key, let generation) in actions {
            let identity = key.identity
            guard locked.querySets[identity]?.members.removeValue(forKey: generation) != nil,
                let querySet = locked.querySets[identity]
            else { continue }
            querySet.set.remove(generation)
            if querySet.members.isEmpty {
                locked.querySets[identity] = nil
                querySet.task?.cancel()
                querySet.set.close()
            }
            metrics.upstreamSubscriptionRemoved()
            logger.debug("upstream subscription closed", metadata: ["convex.function": "\(key.function)"])
        }
    }

    /// Carries out the actions that happen outside the lock: waking waiters, delivering events, ending streams.
    private func perform(_ actions: [HubState.Action]) {
        // Rendered once per result and output mode; a patch once per change and mode, only if a stream reads patches.
        var rendered: [RenderedKey: SubscriptionUpdate] = [:]
        var patched: Set<RenderedKey> = []
        for action in actions {
            switch action {
            case .subscribe, .unsubscribe:
                break  // carried out under the lock
            case .resume(let waiters, let current):
                let waits = state.withLock { locked in
                    waiters.compactMap { locked.waiters.removeValue(forKey: $0) }
                }
                for wait in waits { wait.end(with: current) }
            case .deliver(let delivery, let sink):
                sink.deliver(
                    transition(
                        delivery, format: sink.format, patches: sink.wantsPatches, rendered: &rendered,
                        patched: &patched))
            case .fanOut(let fanOut):
                // One transition per output mode and patch choice (a handful), shared by every stream.
                var made: [(format: OutputFormat, patches: Bool, transition: StreamTransition)] = []
                for sink in fanOut.sinks {
                    let format = sink.format
                    let patches = sink.wantsPatches
                    if let index = made.firstIndex(where: { $0.format == format && $0.patches == patches }) {
                        sink.deliver(made[index].transition)
                        continue
                    }
                    let transition = transition(
                        fanOut.delivery, format: format, patches: patches, rendered: &rendered, patched: &patched)
                    made.append((format, patches, transition))
                    sink.deliver(transition)
                }
            case .end(let sinks):
                for sink in sinks { sink.end() }
            }
        }
    }

    /// A delivery rendered for a stream in `format`: each result rendered once per mode (`rendered`), a JSON Patch made
    /// once per change and mode when a stream reads patches (`patched`).
    private func transition(
        _ delivery: HubState.Delivery, format: OutputFormat, patches: Bool,
        rendered: inout [RenderedKey: SubscriptionUpdate], patched: inout Set<RenderedKey>
    ) -> StreamTransition {
        let changes = delivery.changes.map { change -> StreamTransition.Change in
            let renderedKey = RenderedKey(key: change.key, current: change.current.id, format: format)
            var update = rendered[renderedKey] ?? update(for: change.key, current: change.current, format: format)
            if patches, let previous = change.previous, patched.insert(renderedKey).inserted {
                update.patch = ValueDelta.patch(from: previous, to: change.current, body: update.body) {
                    render($0, format)
                }
            }
            rendered[renderedKey] = update
            return StreamTransition.Change(member: change.member, update: update)
        }
        return StreamTransition(ts: delivery.ts, changes: changes)
    }

    private struct RenderedKey: Hashable {
        var key: Key
        var current: String
        var format: OutputFormat
    }

    /// A transition of the query set `querySet` of `identity`.
    private func receive(_ transition: UpstreamTransition, identity: String, querySet: UInt64) {
        // Hashed before taking the lock: hashing reads the whole value.
        let hashes = transition.changes.map { Self.hash(of: $0.result) }
        let wallMilliseconds = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        let (actions, reached) = state.withLock { locked -> ([HubState.Action], [SessionWaiter]) in
            guard let set = locked.querySets[identity], set.generation == querySet else { return ([], []) }
            var changes: [HubState.Change] = []
            for (change, hash) in zip(transition.changes, hashes) {
                guard let key = set.members[change.token] else { continue }
                changes.append(HubState.Change(key: key, generation: change.token, result: change.result, hash: hash))
            }
            let actions = locked.hub.receive(
                ts: transition.ts, identity: identity, changes: changes, wallMilliseconds: wallMilliseconds,
                now: clock.now)
            return (actions, Self.sessionWaitersDone(identity, ended: false, &locked))
        }
        perform(actions)
        for waiter in reached { waiter.wait.end(with: true) }
    }

    /// The query set's transitions ended without it being closed (its connection closed, or refused the
    /// credentials): every entry it held ends, so that streams reconnect and resubscribe.
    private func querySetEnded(identity: String, generation: UInt64) {
        let (actions, ended) = state.withLock { locked -> ([HubState.Action], [SessionWaiter]) in
            guard let set = locked.querySets[identity], set.generation == generation else { return ([], []) }
            locked.querySets[identity] = nil
            var actions: [HubState.Action] = []
            for (token, key) in set.members {
                actions += locked.hub.upstreamEnded(key, generation: token)
                metrics.upstreamSubscriptionRemoved()
            }
            return (actions, Self.sessionWaitersDone(identity, ended: true, &locked))
        }
        perform(actions)
        for waiter in ended { waiter.wait.end(with: false) }
    }

    // MARK: Rendering

    /// `snapshot` rendered in `format`: the body and the single-subscription event, each rendered once while the
    /// snapshot is current.
    private func update(for key: Key, current: CurrentResult, format: OutputFormat) -> SubscriptionUpdate {
        let cached = state.withLock { locked in
            (
                body: locked.hub.cachedBody(key, current: current, format: format),
                event: locked.hub.cachedEvent(key, current: current, format: format)
            )
        }
        let body: [UInt8]
        let isFailure: Bool
        switch current.result {
        case .value(let value):
            body = cached.body ?? render(value, format)
            isFailure = false
            if cached.body == nil {
                state.withLock { $0.hub.cache(body, key: key, current: current, format: format, isEvent: false) }
            }
        case .failure(let failure):
            body = failure.gatewayError(logging: logger).body { render($0, format) }
            isFailure = true
        }
        let event: [UInt8]
        if let cachedEvent = cached.event {
            event = cachedEvent
        } else {
            event = ServerSentEvent(event: isFailure ? ServerSentEvent.Name.failure : nil, id: current.id, data: body)
                .encoded()
            state.withLock { $0.hub.cache(event, key: key, current: current, format: format, isEvent: true) }
        }
        return SubscriptionUpdate(current: current, hash: current.hash, body: body, event: event)
    }

    static func hash(of result: UpstreamResult) -> UInt64 {
        var hasher = ContentHash()
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
}
