import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TimeSource

/// A token provider: called before every connect with `forceRefresh` true after the deployment rejected the last
/// token. Returns a JWT, or `nil` for no identity.
public typealias ConvexTokenProvider = @Sendable (_ forceRefresh: Bool) async throws -> String?

/// The engine behind ``ConvexClient``: the ``SyncState`` under a lock, the subscribers' mailboxes, the callers
/// waiting for mutations and actions, and one long-lived connection loop.
///
/// Every event takes the lock, asks the state machine, queues the produced messages on the open ``ClientSocket``
/// and delivers subscription results while still holding it (so the order the state machine chose is the order on
/// the wire and in each mailbox; both operations are non-blocking), then flushes the queued frames and resumes
/// finished callers after leaving it.
final class ClientCore: Sendable {
    struct Locked {
        var sync: SyncState
        var mailboxes: [SubscriberID: ResultMailbox] = [:]
        var waiters: [RequestID: PendingCall] = [:]
        /// The open socket, which takes the outbound frames; `nil` while disconnected.
        var outbound: ClientSocket?
        /// Signs of life of the current socket (its watchdog's readings); `nil` before the first.
        var activity: SocketActivity?
        /// Increments per socket, so a stale socket cannot touch the state.
        var generation: UInt64 = 0
        var loopTask: Task<Void, Never>?
        var observers: [UInt64: AsyncStream<ConnectionState>.Continuation] = [:]
        var published: ConnectionState = .idle
        var nextID: UInt64 = 0
        var tokenProvider: ConvexTokenProvider?
        var connectedWaiters: [UInt64: OneShot<Void>] = [:]
        /// Deadlines of one-shot calls, checked by one sweeper task instead of a timer task per call.
        var callDeadlines: [RequestID: CallDeadline] = [:]
        var queryDeadlines: [SubscriberID: QueryDeadline] = [:]
        var sweeper: Task<Void, Never>?
        /// Sleeps until the planned token refresh.
        var refreshTimer: Task<Void, Never>?
        /// Who hears of transitions (``ConvexClient/transitions()``, ``ConvexQuerySet``), by id.
        var listeners: [UInt64: Listener] = [:]
        /// The query-set listener of each query-set member.
        var listenerMembers: [SubscriberID: UInt64] = [:]
        /// The timestamp of the last applied Transition: the snapshot of the results the client holds.
        var viewTimestamp = ConvexTimestamp.zero
        /// Callers of ``waitForView(atLeast:timeout:)``, by id.
        var viewWaiters: [UInt64: ViewWaiter] = [:]
    }

    /// Deadlines are times of ``ConvexClientConfiguration/clock``.
    struct CallDeadline {
        let at: Duration
        let call: PendingCall
        let what: String
        let udfPath: String
    }

    struct QueryDeadline {
        let at: Duration
        let mailbox: ResultMailbox
        let udfPath: String
    }

    /// What to do after leaving the lock.
    struct Deferred {
        var resumes: [(PendingCall, QueryResult)] = []
        var wake = false
        var settled: [OneShot<Void>] = []
        /// The socket that got frames, to be written after leaving the lock.
        var outbound: ClientSocket?

        /// Runs it: flushes the socket's queued frames (written on the socket's event loop, right here if this is
        /// it), then resumes callers and waiters.
        func run(_ core: ClientCore) {
            outbound?.flush()
            for (call, result) in resumes { call.result.complete(result) }
            for waiter in settled { waiter.complete(()) }
            if wake { core.wakeSignal.signal() }
        }
    }

    let webSocketURL: String
    let configuration: ConvexClientConfiguration
    let logger: Logger
    let state: Mutex<Locked>
    let wakeSignal = WakeSignal()

    init(webSocketURL: String, configuration: ConvexClientConfiguration, logger: Logger) {
        self.webSocketURL = webSocketURL
        self.configuration = configuration
        self.logger = logger
        let sync = SyncState(
            sessionId: configuration.sessionId ?? UUID().uuidString.lowercased(),
            backoff: Backoff(initial: configuration.initialBackoff, maximum: configuration.maxBackoff))
        self.state = Mutex(Locked(sync: sync))
    }

    // MARK: Applying effects

    /// Sends, delivers and publishes under the lock; returns what must happen outside it.
    func applyLocked(_ effects: SyncState.Effects, _ l: inout Locked) -> Deferred {
        var deferred = Deferred()
        if !effects.send.isEmpty, let outbound = l.outbound {
            outbound.enqueue(effects.send)
            deferred.outbound = outbound
        }
        // A result belongs to the view the effects leave the client in (a joining subscriber's held result: the
        // current view).
        let viewTimestamp = effects.transition?.ts ?? l.viewTimestamp
        for (subscriber, result) in effects.deliveries {
            l.mailboxes[subscriber]?.deliver(result, at: viewTimestamp)
        }
        reportLocked(effects, &l)
        for (id, result) in effects.completions {
            l.callDeadlines[id] = nil
            if let waiter = l.waiters.removeValue(forKey: id) {
                if let ts = effects.commitTimestamps[id] { waiter.commitTimestamp.withLock { $0 = ts } }
                deferred.resumes.append((waiter, result))
            }
        }
        if effects.startConnection, l.loopTask == nil, l.sync.phase != .closed {
            l.loopTask = Task { [self] in await self.connectionLoop() }
        }
        deferred.wake = effects.wakeConnectionLoop
        if effects.tokenConfirmed, case let reading = configuration.clock.read(),
            let plan = l.sync.planTokenRefresh(now: reading.wallSeconds, leeway: configuration.tokenRefreshLeeway)
        {
            l.refreshTimer?.cancel()
            // The deadline is read now, under the lock, from the same reading as the plan's wall clock: a task that
            // starts late still refreshes on time, and a clock that moves meanwhile cannot push the refresh later.
            let deadline = reading.now + plan.delay
            l.refreshTimer = Task { [self] in
                do { try await configuration.clock.sleep(until: deadline) } catch { return }
                await refreshToken(generation: plan.generation)
            }
        }
        publishLocked(&l, into: &deferred)
        return deferred
    }

    /// A planned refresh is due: asks the provider with `forceRefresh` and authenticates again on the open socket.
    private func refreshToken(generation: UInt64) async {
        let provider: ConvexTokenProvider? = state.withLock { l in
            l.sync.tokenRefreshIsDue(generation: generation) ? l.tokenProvider : nil
        }
        guard let provider else { return }
        var jwt: String?
        var failure: String?
        do {
            jwt = try await provider(true)
        } catch {
            logger.warning("Convex token provider failed", metadata: ["error": "\(error)"])
            failure = "Token provider failed: \(error)"
        }
        let deferred = state.withLock { l in
            let effects =
                failure.map { l.sync.tokenRefreshFailed($0, generation: generation) }
                ?? l.sync.tokenRefreshed(jwt, generation: generation)
            // The socket's end reports back through the connection loop, which applies the failure.
            if effects.resetConnection != nil { l.outbound?.close() }
            return applyLocked(effects, &l)
        }
        deferred.run(self)
    }

    private func publishLocked(_ l: inout Locked, into deferred: inout Deferred) {
        let current = l.sync.connectionState
        guard current != l.published else { return }
        l.published = current
        for observer in l.observers.values { observer.yield(current) }
        if Self.isSettled(current) {
            deferred.settled.append(contentsOf: l.connectedWaiters.values)
            l.connectedWaiters.removeAll()
        }
        wakeViewWaitersLocked(&l)
    }

    private func withState(_ body: (inout Locked) -> SyncState.Effects) -> Void {
        let deferred = state.withLock { l in applyLocked(body(&l), &l) }
        deferred.run(self)
    }

    // MARK: Subscriptions

    /// A new subscriber: its results go to `mailbox`, or to the query set `listener` (``ConvexQuerySet``).
    func addSubscriber(
        udfPath: String, args: [String: ConvexValue], mailbox: ResultMailbox?, listener: UInt64? = nil
    ) -> SubscriberID {
        var id = SubscriberID(raw: 0)
        withState { l in
            id = SubscriberID(raw: l.nextID)
            l.nextID += 1
            l.mailboxes[id] = mailbox
            l.listenerMembers[id] = listener
            return l.sync.subscribe(id, udfPath: udfPath, args: args)
        }
        return id
    }

    func removeSubscriber(_ id: SubscriberID) {
        withState { l in
            l.mailboxes[id] = nil
            l.listenerMembers[id] = nil
            l.queryDeadlines[id] = nil
            return l.sync.unsubscribe(id)
        }
    }

    /// One result of a query: the current one if another subscriber already has it, else the first to arrive.
    func queryOnce(udfPath: String, args: [String: ConvexValue], timeout: Duration?) async -> QueryResult {
        await queryOnceStamped(udfPath: udfPath, args: args, timeout: timeout).result
    }

    /// ``queryOnce(udfPath:args:timeout:)`` with the timestamp of the client's view the result belongs to.
    func queryOnceStamped(
        udfPath: String, args: [String: ConvexValue], timeout: Duration?
    ) async -> ResultMailbox.Stamped {
        let mailbox = ResultMailbox()
        let id = addSubscriber(udfPath: udfPath, args: args, mailbox: mailbox)
        defer { removeSubscriber(id) }
        if let timeout {
            state.withLock { l in
                let at = configuration.clock.now + timeout
                l.queryDeadlines[id] = QueryDeadline(at: at, mailbox: mailbox, udfPath: udfPath)
                startSweeperLocked(&l)
            }
        }
        if let stamped = await mailbox.nextStamped() {
            return stamped
        }
        return ResultMailbox.Stamped(result: .failure(cancelledOrClosed(udfPath)), ts: .zero)
    }

    private func cancelledOrClosed(_ udfPath: String) -> ConvexClientError {
        let closed = state.withLock { $0.sync.phase == .closed }
        return closed
            ? ConvexClientError(.clientClosed, message: "The client is closed", functionPath: udfPath)
            : ConvexClientError(.cancelled, message: "The call was cancelled", functionPath: udfPath)
    }

    // MARK: Mutations and actions

    /// One pending mutation or action: its id for the deadline and cancellation handler, and its result.
    final class PendingCall: Sendable {
        let id = Mutex<RequestID?>(nil)
        let result = OneShot<QueryResult>()
        /// A successful mutation's commit timestamp, set before ``result`` completes.
        let commitTimestamp = Mutex<ConvexTimestamp?>(nil)
    }

    func request(_ kind: SyncState.RequestKind, udfPath: String, args: [String: ConvexValue], timeout: Duration?)
        async -> QueryResult
    {
        await requestCommitted(kind, udfPath: udfPath, args: args, timeout: timeout).result
    }

    /// ``request(_:udfPath:args:timeout:)`` with a successful mutation's commit timestamp.
    func requestCommitted(
        _ kind: SyncState.RequestKind, udfPath: String, args: [String: ConvexValue], timeout: Duration?,
        requestId: RequestID? = nil
    ) async -> (result: QueryResult, commitTimestamp: ConvexTimestamp?) {
        let call = PendingCall()
        let what = kind == .mutation ? "mutation" : "action"
        return await withTaskCancellationHandler {
            let deferred = state.withLock { l in
                let (id, effects) = l.sync.request(kind, udfPath: udfPath, args: args, id: requestId)
                l.waiters[id] = call
                call.id.withLock { $0 = id }
                if let timeout {
                    let at = configuration.clock.now + timeout
                    l.callDeadlines[id] = CallDeadline(at: at, call: call, what: what, udfPath: udfPath)
                    startSweeperLocked(&l)
                }
                return applyLocked(effects, &l)
            }
            // The request goes out with one hop to the socket's event loop, no task in between.
            deferred.run(self)
            if Task.isCancelled {
                abandon(call, what: what, udfPath: udfPath, reason: .cancelled)
            }
            let result = await call.result.wait()
            return (result, call.commitTimestamp.withLock { $0 })
        } onCancel: {
            abandon(call, what: what, udfPath: udfPath, reason: .cancelled)
        }
    }

    private enum AbandonReason { case cancelled, timeout }

    /// Starts the deadline sweeper if it is not running; it stops itself when no deadline is left.
    private func startSweeperLocked(_ l: inout Locked) {
        guard l.sweeper == nil, l.sync.phase != .closed else { return }
        let tick = max(min((configuration.callTimeout ?? .seconds(1)) / 10, .milliseconds(100)), .milliseconds(1))
        l.sweeper = Task { [self] in await sweepDeadlines(every: tick) }
    }

    private func sweepDeadlines(every tick: Duration) async {
        while !Task.isCancelled {
            try? await configuration.clock.sleep(for: tick)
            let now = configuration.clock.now
            let (calls, queries, done): ([CallDeadline], [(QueryDeadline, ConvexClientError)], Bool) = state.withLock {
                l in
                let calls = l.callDeadlines.values.filter { $0.at <= now }
                var queries: [(QueryDeadline, ConvexClientError)] = []
                for (id, deadline) in l.queryDeadlines where deadline.at <= now {
                    l.queryDeadlines[id] = nil
                    queries.append((deadline, l.sync.timeoutError(what: "query").withFunctionPath(deadline.udfPath)))
                }
                let done = l.callDeadlines.count == calls.count && l.queryDeadlines.isEmpty
                if done || l.sync.phase == .closed { l.sweeper = nil }
                return (calls, queries, done || l.sync.phase == .closed)
            }
            for deadline in calls {
                abandon(deadline.call, what: deadline.what, udfPath: deadline.udfPath, reason: .timeout)
            }
            for (deadline, error) in queries {
                deadline.mailbox.deliver(.failure(error))
            }
            if done { return }
        }
    }

    private func abandon(_ call: PendingCall, what: String, udfPath: String, reason: AbandonReason) {
        guard let id = call.id.withLock({ $0 }) else { return }
        let result: QueryResult? = state.withLock { l in
            l.callDeadlines[id] = nil
            guard l.waiters.removeValue(forKey: id) != nil else { return nil }
            let status = l.sync.abandonRequest(id)
            if case .completed(let value, _)? = status {
                return .success(value)
            }
            var error: ConvexClientError
            switch reason {
            case .cancelled: error = ConvexClientError(.cancelled, message: "The \(what) was cancelled")
            case .timeout: error = l.sync.timeoutError(what: what)
            }
            let outcome: String
            switch status {
            case .notSent?: outcome = "it was never sent, so it did not run"
            default:
                outcome = "it was sent, so it may have run"
                // "Unreachable" says a call never reached the deployment (a caller may send it again, elsewhere); one
                // sent before the connection went is a lost connection, whose outcome is unknown.
                if error.code == .unreachable { error = ConvexClientError(.connectionLost, message: error.message) }
            }
            error = ConvexClientError(error.code, message: "\(error.message); \(outcome)", functionPath: udfPath)
            return .failure(error)
        }
        if let result { call.result.complete(result) }
    }

    // MARK: Authentication

    func setAuth(_ setting: SyncState.AuthSetting, token: AuthenticationToken?, provider: ConvexTokenProvider?) {
        withState { l in
            l.tokenProvider = provider
            return l.sync.setAuth(setting, token: token)
        }
    }

    // MARK: Connection state

    var connectionState: ConnectionState {
        state.withLock { $0.published }
    }

    func connectionStates() -> AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ConnectionState.self, bufferingPolicy: .bufferingNewest(32))
        let id: UInt64 = state.withLock { l in
            let id = l.nextID
            l.nextID += 1
            continuation.yield(l.published)
            if l.published == .closed {
                continuation.finish()
            } else {
                l.observers[id] = continuation
            }
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Starts connecting if idle and waits until connected, closed, failed authentication, or `timeout` (on the
    /// configuration's clock).
    func waitUntilConnected(timeout: Duration) async -> ConnectionState {
        let done = OneShot<Void>()
        let (id, deferred): (UInt64, Deferred) = state.withLock { l in
            let id = l.nextID
            l.nextID += 1
            var effects = SyncState.Effects()
            if l.sync.phase == .idle { effects.startConnection = true }
            var deferred = applyLocked(effects, &l)
            if Self.isSettled(l.published) {
                deferred.settled.append(done)
            } else {
                l.connectedWaiters[id] = done
            }
            return (id, deferred)
        }
        deferred.run(self)
        let timer = Task { [clock = configuration.clock] in
            try? await clock.sleep(for: timeout)
            done.complete(())
        }
        await withTaskCancellationHandler {
            await done.wait()
        } onCancel: {
            done.complete(())
        }
        timer.cancel()
        _ = state.withLock { $0.connectedWaiters.removeValue(forKey: id) }
        return connectionState
    }

    private static func isSettled(_ state: ConnectionState) -> Bool {
        switch state {
        case .connected, .closed, .authenticationFailed: true
        default: false
        }
    }

    // MARK: Closing

    func close() async {
        let (task, deferred, observers, mailboxes, listeners):
            (Task<Void, Never>?, Deferred, [AsyncStream<ConnectionState>.Continuation], [ResultMailbox], [Listener]) =
                state.withLock { l in
                    let effects = l.sync.close()
                    let deferred = applyLocked(effects, &l)
                    l.outbound?.close()
                    l.outbound = nil
                    l.generation += 1
                    let observers = Array(l.observers.values)
                    l.observers.removeAll()
                    let task = l.loopTask
                    l.loopTask = nil
                    l.sweeper?.cancel()
                    l.sweeper = nil
                    l.refreshTimer?.cancel()
                    l.refreshTimer = nil
                    l.callDeadlines.removeAll()
                    l.queryDeadlines.removeAll()
                    let listeners = Array(l.listeners.values)
                    l.listeners.removeAll()
                    return (task, deferred, observers, Array(l.mailboxes.values), listeners)
                }
        deferred.run(self)
        for mailbox in mailboxes { mailbox.finish() }
        for listener in listeners { Self.finish(listener) }
        for observer in observers { observer.finish() }
        task?.cancel()
        wakeSignal.signal()
        await task?.value
    }

    /// Synchronous close for `deinit` of the owner: stops the loop without waiting for it.
    func shutdown() {
        Task { [self] in await close() }
    }
}
