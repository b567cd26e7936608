import Convex
import ConvexValues
import Logging
import Synchronization

/// `ConvexUpstream` over a `ConvexClient`: one WebSocket connection to the deployment for one caller identity.
public final class ClientUpstream: ConvexUpstream {
    public let client: ConvexClient
    private let watcher: Task<Void, Never>
    /// Open subscriptions, ended with an `unauthenticated` failure when the deployment refuses the credentials.
    private let subscriptions: OpenSubscriptions

    /// Opens (lazily) a connection to `deploymentUrl` acting as `identity`; reconnects are counted in `metrics`.
    public init(
        deploymentUrl: String, identity: UpstreamIdentity, metrics: GatewayMetrics,
        configuration: ConvexClientConfiguration = .init(), logger: Logger
    ) throws(ConvexClientError) {
        let client = try ConvexClient(deploymentUrl: deploymentUrl, configuration: configuration, logger: logger)
        if case .bearer(let token) = identity {
            client.setAuth(token: token)
        }
        self.client = client
        let subscriptions = OpenSubscriptions()
        self.subscriptions = subscriptions
        let states = client.connectionStates
        watcher = Task {
            var wasConnected = false
            for await state in states {
                switch state {
                case .connected: wasConnected = true
                case .reconnecting where wasConnected:
                    wasConnected = false
                    metrics.upstreamReconnected()
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

    public func subscribe(_ function: String, args: ConvexValue) -> AsyncStream<UpstreamResult> {
        if case .authenticationFailed(let message) = client.connectionState {
            return AsyncStream { continuation in
                continuation.yield(.failure(.unauthenticated(message)))
                continuation.finish()
            }
        }
        let results = client.subscribe(to: function, with: Self.fields(args)).results
        let subscriptions = self.subscriptions
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let id = subscriptions.add(continuation)
            let task = Task {
                for await result in results {
                    switch result {
                    case .success(let value): continuation.yield(.value(value))
                    case .failure(let error): continuation.yield(.failure(Self.failure(error, timeout: nil)))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in
                task.cancel()
                subscriptions.remove(id)
            }
        }
    }

    public func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration)
        async throws(UpstreamFailure) -> ConvexValue
    {
        let fields = Self.fields(args)
        do {
            switch kind {
            case .query: return try await client.query(function, with: fields, timeout: timeout)
            case .mutation: return try await client.mutation(function, with: fields, timeout: timeout)
            case .action: return try await client.action(function, with: fields, timeout: timeout)
            }
        } catch {
            throw Self.failure(error, timeout: timeout)
        }
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
        await client.close()
        watcher.cancel()
    }

    private static func fields(_ args: ConvexValue) -> [String: ConvexValue] {
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
    /// A factory of connections to `deploymentUrl`, one per identity, for `Gateway`.
    /// - Throws: ``ConvexClientError`` when the URL is not a deployment URL (checked once, here).
    public static func factory(
        deploymentUrl: String, configuration: ConvexClientConfiguration = .init(), logger: Logger
    ) throws(ConvexClientError) -> @Sendable (UpstreamIdentity, GatewayMetrics) -> any ConvexUpstream {
        _ = try ConvexClient(deploymentUrl: deploymentUrl, configuration: configuration, logger: logger)
        return { identity, metrics in
            do throws(ConvexClientError) {
                return try ClientUpstream(
                    deploymentUrl: deploymentUrl, identity: identity, metrics: metrics, configuration: configuration,
                    logger: logger)
            } catch {
                return UnavailableUpstream(reason: error.message)
            }
        }
    }
}

/// The continuations of a client's open subscriptions.
private final class OpenSubscriptions: Sendable {
    private let state = Mutex<(next: UInt64, open: [UInt64: AsyncStream<UpstreamResult>.Continuation])>((0, [:]))

    func add(_ continuation: AsyncStream<UpstreamResult>.Continuation) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.open[state.next] = continuation
            return state.next
        }
    }

    func remove(_ id: UInt64) {
        _ = state.withLock { $0.open.removeValue(forKey: id) }
    }

    /// Sends `failure` as the last element of every open subscription and ends them.
    func endAll(with failure: UpstreamFailure) {
        let open = state.withLock { state in
            defer { state.open = [:] }
            return Array(state.open.values)
        }
        for continuation in open {
            continuation.yield(.failure(failure))
            continuation.finish()
        }
    }
}

/// An upstream that cannot be used; every call reports it unavailable.
struct UnavailableUpstream: ConvexUpstream {
    let reason: String

    func subscribe(_ function: String, args: ConvexValue) -> AsyncStream<UpstreamResult> {
        AsyncStream { $0.finish() }
    }
    func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration) async throws(UpstreamFailure)
        -> ConvexValue
    { throw .unavailable(reason) }
    var isConnected: Bool { false }
    func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) { throw .unavailable(reason) }
    func close() async {}
}
