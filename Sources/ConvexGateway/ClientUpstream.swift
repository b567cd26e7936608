import Convex
import ConvexValues
import Logging
import Synchronization

/// `ConvexUpstream` over a `ConvexClient`: one WebSocket connection to the deployment for one caller identity.
public final class ClientUpstream: ConvexUpstream {
    public let client: ConvexClient
    private let watcher: Task<Void, Never>

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
        let states = client.connectionStates
        watcher = Task {
            var wasConnected = false
            for await state in states {
                switch state {
                case .connected: wasConnected = true
                case .reconnecting where wasConnected:
                    wasConnected = false
                    metrics.upstreamReconnected()
                case .closed: return
                default: break
                }
            }
        }
    }

    deinit { watcher.cancel() }

    public func subscribe(_ function: String, args: ConvexValue) -> AsyncStream<UpstreamResult> {
        let results = client.subscribe(to: function, with: Self.fields(args)).results
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                for await result in results {
                    switch result {
                    case .success(let value): continuation.yield(.value(value))
                    case .failure(let error): continuation.yield(.failure(Self.failure(error)))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func query(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue {
        do {
            return try await client.query(function, with: Self.fields(args))
        } catch {
            throw Self.failure(error)
        }
    }

    public func mutation(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue {
        do {
            return try await client.mutation(function, with: Self.fields(args))
        } catch {
            throw Self.failure(error)
        }
    }

    public func action(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue {
        do {
            return try await client.action(function, with: Self.fields(args))
        } catch {
            throw Self.failure(error)
        }
    }

    public var isConnected: Bool { client.isConnected }

    public func waitUntilConnected(timeout: Duration) async -> Bool {
        do {
            try await client.waitUntilConnected(timeout: timeout)
            return true
        } catch {
            return false
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

    static func failure(_ error: ConvexClientError) -> UpstreamFailure {
        switch error.code {
        case .convexError: .convexError(message: error.message, data: error.data ?? .null)
        case .unknownFunction: .unknownFunction(message: error.message)
        case .invalidArguments: .invalidArguments(message: error.message)
        case .unreachable, .clientClosed, .cancelled, .invalidURL: .unavailable(error.message)
        case .connectionLost: .connectionLost(error.message)
        case .timeout: .timeout(seconds: 0)
        case .authenticationFailed: .unauthenticated(error.message)
        default: .functionFailed(message: error.message)
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

/// An upstream that cannot be used; every call reports it unavailable.
struct UnavailableUpstream: ConvexUpstream {
    let reason: String

    func subscribe(_ function: String, args: ConvexValue) -> AsyncStream<UpstreamResult> {
        AsyncStream { $0.finish() }
    }
    func query(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue { throw .unavailable(reason) }
    func mutation(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue { throw .unavailable(reason) }
    func action(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue { throw .unavailable(reason) }
    var isConnected: Bool { false }
    func waitUntilConnected(timeout: Duration) async -> Bool { false }
    func close() async {}
}
