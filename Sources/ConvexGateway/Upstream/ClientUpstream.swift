import Convex
import ConvexSyncProtocol
import ConvexValues
import Logging
import Synchronization

/// `ConvexUpstream` over a `ConvexClient`: one WebSocket connection to the deployment for one caller identity.
public final class ClientUpstream: ConvexUpstream {
    public let client: ConvexClient
    private let watcher: Task<Void, Never>
    /// Open query sets, ended with an `unauthenticated` failure when the deployment refuses the credentials.
    private let subscriptions: OpenQuerySets
    /// Where failures to connect go: one object for every identity of a gateway (the factory's).
    let connectWarnings: UpstreamConnectWarnings?
    /// The connections of pages' sync sessions (`POST /mutations`), with this identity's credentials.
    let sessions: SessionClients
    /// Whether the deployment is known unreachable: one object for every identity of a gateway (the factory's).
    let reachability: DeploymentReachability?

    /// Opens (lazily) a connection to `deploymentUrl` acting as `identity`; reconnects are counted in `metrics`, and
    /// failures to connect go to `connectWarnings` (the gateway's one rate-limited warning for all identities).
    public convenience init(
        deploymentUrl: String, identity: UpstreamIdentity, metrics: GatewayMetrics,
        configuration: ConvexClientConfiguration = .init(), logger: Logger
    ) throws(ConvexClientError) {
        try self.init(
            deploymentUrl: deploymentUrl, identity: identity, metrics: metrics, configuration: configuration,
            connectWarnings: nil, reachability: nil, logger: logger)
    }

    init(
        deploymentUrl: String, identity: UpstreamIdentity, metrics: GatewayMetrics,
        configuration: ConvexClientConfiguration, connectWarnings: UpstreamConnectWarnings?,
        reachability: DeploymentReachability?, logger: Logger
    ) throws(ConvexClientError) {
        let client = try ConvexClient(deploymentUrl: deploymentUrl, configuration: configuration, logger: logger)
        if case .bearer(let token) = identity {
            client.setAuth(token: token)
        }
        self.client = client
        self.connectWarnings = connectWarnings
        self.reachability = reachability
        self.sessions = SessionClients(
            capacity: SessionClients.defaultCapacity, idleTimeout: SessionClients.defaultIdleTimeout,
            clock: configuration.clock
        ) { session throws(ConvexClientError) in
            var sessionConfiguration = configuration
            sessionConfiguration.sessionId = session
            let client = try ConvexClient(
                deploymentUrl: deploymentUrl, configuration: sessionConfiguration, logger: logger)
            if case .bearer(let token) = identity { client.setAuth(token: token) }
            return client
        }
        let subscriptions = OpenQuerySets()
        self.subscriptions = subscriptions
        let states = client.connectionStates
        watcher = Task {
            var wasConnected = false
            for await state in states {
                switch state {
                case .connected:
                    wasConnected = true
                    reachability?.connected()
                case .reconnecting(let reason):
                    if wasConnected { metrics.upstreamReconnected() }
                    wasConnected = false
                    connectWarnings?.connectionFailed(reason: reason)
                    reachability?.connectionEnded(reason: reason)
                case .authenticationFailed(let message):
                    // The identity's token expired or was refused: nothing more of it is served.
                    subscriptions.endAll(with: .unauthenticated(message))
                case .closed: return
                default: break
                }
            }
        }
    }

    deinit { watcher.cancel() }

    public var unreachableCause: String? {
        guard let cause = reachability?.unreachableCause, !client.isConnected else { return nil }
        return cause.description
    }

    public var credentialsRefused: Bool {
        if case .authenticationFailed = client.connectionState { return true }
        return false
    }

    public func makeQuerySet() -> any UpstreamQuerySet {
        let set = ClientQuerySet(client: client, registry: subscriptions)
        if case .authenticationFailed(let message) = client.connectionState {
            set.end(with: .unauthenticated(message))
        }
        return set
    }

    public func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration)
        async throws(UpstreamFailure) -> UpstreamAnswer
    {
        let fields = Self.fields(args)
        do {
            switch kind {
            case .query:
                let (value, ts) = try await client.queryStamped(function, with: fields, timeout: timeout)
                return UpstreamAnswer(value: value, ts: ts)
            case .mutation:
                let (value, ts) = try await client.mutationStamped(function, with: fields, timeout: timeout)
                return UpstreamAnswer(value: value, ts: ts)
            case .action:
                return UpstreamAnswer(value: try await client.action(function, with: fields, timeout: timeout))
            }
        } catch {
            throw Self.failure(error, timeout: timeout)
        }
    }

    public func mutation(_ function: String, args: ConvexValue, as request: SessionRequest, timeout: Duration)
        async throws(UpstreamFailure) -> UpstreamAnswer
    {
        switch await sessions.mutation(function, args: Self.fields(args), as: request, timeout: timeout) {
        case .success(let answer)?: return UpstreamAnswer(value: answer.value, ts: answer.ts)
        case .failure(let error)?: throw Self.failure(error, timeout: timeout)
        case nil:
            throw .busy(
                "The gateway holds as many page sessions' connections for this caller as it may "
                    + "(\(sessions.capacity)); try again shortly")
        }
    }

    public func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp {
        await client.waitForView(atLeast: ts, timeout: timeout)
    }

    public var isConnected: Bool { client.isConnected }

    public func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) {
        do {
            try await client.waitUntilConnected(timeout: timeout)
        } catch {
            throw Self.failure(error, timeout: nil)
        }
    }

    public func close() async {
        await sessions.closeAll()
        await client.close()
        watcher.cancel()
    }

    static func fields(_ args: ConvexValue) -> [String: ConvexValue] {
        if case .object(let fields) = args { return fields }
        return [:]
    }

    /// The one conversion of the client's errors into the gateway's upstream failure kinds; `timeout` is the
    /// deadline the call was given.
    static func failure(_ error: ConvexClientError, timeout: Duration?) -> UpstreamFailure {
        switch error.code {
        case .convexError: .convexError(message: error.message, data: error.data ?? .null)
        case .unknownFunction: .unknownFunction(message: error.message)
        case .invalidArguments: .invalidArguments(message: error.message)
        case .functionFailed: .functionFailed(message: error.message)
        case .unreachable, .clientClosed, .cancelled, .invalidURL: .unavailable(error.message)
        case .connectionLost: .connectionLost(error.message)
        case .timeout: timeout.map { .timeout(seconds: $0.seconds) } ?? .unexpected(error.message)
        case .authenticationFailed: .unauthenticated(error.message)
        default: .unexpected("\(error.code): \(error.message)")
        }
    }
}

extension ClientUpstream {
    /// A factory of connections to `deploymentUrl`, one per identity, for `Gateway`. Their failures to connect are
    /// logged at `warning`, one line per `connectWarningInterval` for all of them, on the configuration's clock.
    /// - Throws: ``ConvexClientError`` when the URL is not a deployment URL (checked once, here).
    /// The longest wait between a gateway connection's attempts to reach the deployment (the client's backoff has
    /// full jitter below it): how soon after the deployment comes back a gateway that refused requests while it was
    /// down serves them again.
    public static let maxReconnectBackoff = Duration.seconds(1)

    public static func factory(
        deploymentUrl: String, configuration: ConvexClientConfiguration = .init(),
        connectWarningInterval: Duration = .seconds(30), logger: Logger
    ) throws(ConvexClientError) -> @Sendable (UpstreamIdentity, GatewayMetrics) -> any ConvexUpstream {
        _ = try ConvexClient(deploymentUrl: deploymentUrl, configuration: configuration, logger: logger)
        let warnings = UpstreamConnectWarnings(
            deploymentURL: deploymentUrl, clock: configuration.clock, interval: connectWarningInterval, logger: logger)
        let reachability = DeploymentReachability()
        // While the deployment is down, requests are refused at once and the connections retry in the background:
        // their backoff is kept short, so that the first request after it comes back is served.
        var configuration = configuration
        configuration.maxBackoff = min(configuration.maxBackoff, maxReconnectBackoff)
        configuration.initialBackoff = min(configuration.initialBackoff, configuration.maxBackoff)
        return { [configuration] identity, metrics in
            do throws(ConvexClientError) {
                return try ClientUpstream(
                    deploymentUrl: deploymentUrl, identity: identity, metrics: metrics, configuration: configuration,
                    connectWarnings: warnings, reachability: reachability, logger: logger)
            } catch {
                return UnavailableUpstream(reason: error.message)
            }
        }
    }
}

/// The open query sets of a client.
private final class OpenQuerySets: Sendable {
    private let state = Mutex<(next: UInt64, open: [UInt64: ClientQuerySet])>((0, [:]))

    func add(_ set: ClientQuerySet) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.open[state.next] = set
            return state.next
        }
    }

    func remove(_ id: UInt64) {
        _ = state.withLock { $0.open.removeValue(forKey: id) }
    }

    /// Gives every member of every open set `failure` as its last result and ends the sets.
    func endAll(with failure: UpstreamFailure) {
        let open = state.withLock { state in
            defer { state.open = [:] }
            return Array(state.open.values)
        }
        for set in open { set.end(with: failure) }
    }
}

/// ``UpstreamQuerySet`` over a ``ConvexQuerySet``: members are named by the caller's tokens.
private final class ClientQuerySet: UpstreamQuerySet {
    private struct State {
        var tokens: [ConvexQuerySet.Member: UInt64] = [:]
        var members: [UInt64: ConvexQuerySet.Member] = [:]
        var lastTimestamp: ConvexTimestamp = .zero
        var ended = false
    }

    let transitions: AsyncStream<UpstreamTransition>
    private let continuation: AsyncStream<UpstreamTransition>.Continuation
    private let set: ConvexQuerySet
    private let state = Mutex(State())
    private let registry: OpenQuerySets
    private let registration: Mutex<UInt64?> = Mutex(nil)

    init(client: ConvexClient, registry: OpenQuerySets) {
        (transitions, continuation) = AsyncStream.makeStream(of: UpstreamTransition.self)
        set = client.makeQuerySet()
        self.registry = registry
        let updates = set.updates
        let forward = Task { [weak self] in
            for await update in updates {
                guard let self else { return }
                self.forward(update)
            }
            self?.endTransitions()
        }
        continuation.onTermination = { _ in forward.cancel() }
        let id = registry.add(self)
        registration.withLock { $0 = id }
    }

    func add(_ token: UInt64, _ function: String, args: ConvexValue) {
        // Under the lock: the member's first result may be forwarded before `add` returns, and must find its token.
        state.withLock { state in
            guard !state.ended else { return }
            let member = set.add(function, with: ClientUpstream.fields(args))
            state.tokens[member] = token
            state.members[token] = member
        }
    }

    func remove(_ token: UInt64) {
        let member = state.withLock { state -> ConvexQuerySet.Member? in
            guard let member = state.members.removeValue(forKey: token) else { return nil }
            state.tokens[member] = nil
            return member
        }
        if let member { set.remove(member) }
    }

    func close() {
        state.withLock { $0.ended = true }
        endTransitions()
    }

    /// Every member's last result is `failure`; then the set ends.
    func end(with failure: UpstreamFailure) {
        let last = state.withLock { state -> UpstreamTransition? in
            guard !state.ended else { return nil }
            state.ended = true
            let changes = state.members.keys.sorted().map {
                UpstreamTransition.TokenResult(token: $0, result: .failure(failure))
            }
            return UpstreamTransition(ts: state.lastTimestamp, changes: changes)
        }
        if let last, !last.changes.isEmpty { continuation.yield(last) }
        endTransitions()
    }

    private func forward(_ update: ConvexQuerySet.Update) {
        let transition = state.withLock { state -> UpstreamTransition? in
            guard !state.ended else { return nil }
            state.lastTimestamp = update.ts
            let changes = update.changes.compactMap { change -> UpstreamTransition.TokenResult? in
                guard let token = state.tokens[change.member] else { return nil }
                switch change.result {
                case .success(let value): return .init(token: token, result: .value(value))
                case .failure(let error):
                    return .init(token: token, result: .failure(ClientUpstream.failure(error, timeout: nil)))
                }
            }
            // Forwarded with no changes too: the members' results hold at the new timestamp.
            return UpstreamTransition(ts: update.ts, changes: changes)
        }
        if let transition { continuation.yield(transition) }
    }

    private func endTransitions() {
        continuation.finish()
        set.close()
        if let id = registration.withLock({ $0 }) { registry.remove(id) }
    }
}

/// An upstream that cannot be used; every call reports it unavailable.
struct UnavailableUpstream: ConvexUpstream {
    let reason: String

    func makeQuerySet() -> any UpstreamQuerySet { EndedQuerySet() }
    func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration) async throws(UpstreamFailure)
        -> UpstreamAnswer
    { throw .unavailable(reason) }
    func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp { .zero }
    var isConnected: Bool { false }
    func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) { throw .unavailable(reason) }
    func close() async {}
}

/// A query set whose transitions have ended: its members never get a result.
struct EndedQuerySet: UpstreamQuerySet {
    func add(_ token: UInt64, _ function: String, args: ConvexValue) {}
    func remove(_ token: UInt64) {}
    var transitions: AsyncStream<UpstreamTransition> { AsyncStream(unfolding: { nil }) }
    func close() {}
}
