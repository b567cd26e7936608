import ConvexSyncProtocol
import ConvexValues
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TimeSource

/// An embedded Convex-compatible deployment on one port: the sync protocol at `GET /api/sync` and
/// `/api/<version>/sync`, the HTTP functions API under `/api`, an in-memory document store and functions
/// written in Swift.
///
/// ```swift
/// let deployment = try await LocalDeployment.start(port: 0, adminKey: "secret")
/// print(deployment.url)           // http://127.0.0.1:54321
/// await deployment.shutdown()
/// ```
///
/// Data lives in memory for the lifetime of the object (``stop()`` and ``restart()`` keep it). Commit
/// timestamps come from the wall clock and never go back, so even a new process is ahead of what its clients saw.
public final class LocalDeployment: Sendable {
    /// Settings of a local deployment.
    public struct Configuration: Sendable {
        /// Address to bind. Default `127.0.0.1`.
        public var host: String
        /// Port to bind; `0` picks a free one. Default `3210`.
        public var port: Int
        /// The admin key (`Authorization: Convex <key>`, sync `Authenticate` Admin). `nil`: admin access is refused.
        /// Secret: never logged.
        public var adminKey: String?
        /// Register the demo functions (`mlb:*`, `logs:*`, `messages:*`, `echo:*`, `conformance:*`). Default true.
        public var demoFunctions: Bool
        /// Interval of WebSocket ping frames on sync sockets. Default 5 s, as Convex; shorter only for tests.
        public var heartbeatInterval: Duration
        /// A JSON `Ping` is sent when a sync socket has sent no message for this long. Default 15 s, as Convex.
        public var jsonPingAfter: Duration
        /// The identity providers user tokens must come from (`convex-local --auth-config`). `nil` (the default):
        /// development mode, any well-formed JWT is accepted unsigned, but its `exp` and `nbf` are still enforced.
        public var authConfig: AuthConfig?
        /// The clock of heartbeats, pings and the wall clock tokens' `exp` and `nbf` are checked against. Default: the
        /// real clocks; a test passes `ElapsedClock(TestClock())` and advances it past a token's expiry.
        public var clock: ElapsedClock
        /// What an unknown function's message advises after Convex's sentence (`Could not find public function for
        /// '<path>'.`). Default: to register it, for an app that serves its own ``FunctionRegistry``; `convex-gateway`
        /// says what its embedded deployment serves instead.
        public var unknownFunctionAdvice = LocalDeployment.registerAdvice

        public init(
            host: String = "127.0.0.1", port: Int = 3210, adminKey: String? = nil, demoFunctions: Bool = true,
            heartbeatInterval: Duration = .seconds(5), jsonPingAfter: Duration = .seconds(15),
            authConfig: AuthConfig? = nil, clock: ElapsedClock = .continuous
        ) {
            self.clock = clock
            self.authConfig = authConfig
            self.host = host
            self.port = port
            self.adminKey = adminKey
            self.demoFunctions = demoFunctions
            self.heartbeatInterval = heartbeatInterval
            self.jsonPingAfter = jsonPingAfter
        }
    }

    private struct Running: Sendable {
        var task: Task<Void, any Error>
        var group: ServiceGroup
        var port: Int
    }

    /// The default advice of an unknown function's message.
    public static let registerAdvice = "Did you forget to register it with the local deployment?"

    public let configuration: Configuration
    /// The functions this deployment serves; register more at any time.
    public let functions: FunctionRegistry
    let core: DeploymentCore
    private let logger: Logger
    private let running = Mutex<Running?>(nil)
    /// Serializes start/stop.
    private let lifecycle = AsyncLock()

    private init(configuration: Configuration, functions: FunctionRegistry, verifier: TokenVerifier, logger: Logger) {
        self.configuration = configuration
        self.functions = functions
        self.logger = logger
        self.core = DeploymentCore(
            registry: functions, adminKey: configuration.adminKey, verifier: verifier, logger: logger,
            heartbeatInterval: configuration.heartbeatInterval, jsonPingAfter: configuration.jsonPingAfter,
            clock: configuration.clock, unknownFunctionAdvice: configuration.unknownFunctionAdvice)
        if configuration.demoFunctions {
            DemoFunctions.register(in: functions)
            DemoFunctions.seed(core)
        }
    }

    /// Starts a deployment and returns once it is listening.
    /// - Parameters:
    ///   - configuration: host, port (0 for any free port), admin key, demo functions.
    ///   - functions: a registry to serve (default: a new one).
    ///   - logger: where the deployment logs (it never bootstraps logging).
    /// - Throws: ``AuthConfigError`` when a provider's `file:` or `data:` key set is unusable; an error when the
    ///   port cannot be bound.
    public static func start(
        _ configuration: Configuration = Configuration(), functions: FunctionRegistry = FunctionRegistry(),
        logger: Logger = Logger(label: "convex-local")
    ) async throws -> LocalDeployment {
        var verifier = TokenVerifier()
        if let config = configuration.authConfig { verifier = try await TokenVerifier(config: config) }
        let deployment = LocalDeployment(
            configuration: configuration, functions: functions, verifier: verifier, logger: logger)
        try await deployment.listen(port: configuration.port)
        return deployment
    }

    /// Starts a deployment. See ``start(_:functions:logger:)``.
    public static func start(
        host: String = "127.0.0.1", port: Int = 0, adminKey: String? = nil, demoFunctions: Bool = true,
        functions: FunctionRegistry = FunctionRegistry(), clock: ElapsedClock = .continuous,
        logger: Logger = Logger(label: "convex-local")
    ) async throws -> LocalDeployment {
        try await start(
            Configuration(host: host, port: port, adminKey: adminKey, demoFunctions: demoFunctions, clock: clock),
            functions: functions, logger: logger)
    }

    /// The bound port (the real one when started with port 0); the last one after ``stop()``.
    public var port: Int { running.withLock { $0?.port } ?? lastPort.withLock { $0 } }
    private let lastPort = Mutex<Int>(0)

    /// `http://host:port`: the deployment URL clients take (they derive `ws://host:port/api/sync`).
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "http://\(host):\(port)"
    }

    /// Whether the server is listening.
    public var isRunning: Bool { running.withLock { $0 != nil } }

    /// Closes every sync socket and stops listening. Data is kept.
    public func shutdown() async {
        await stop()
    }

    /// Stops listening (sync sockets are closed with 1001 Going Away); data is kept and ``restart()`` listens again.
    public func stop() async {
        await lifecycle.withLock {
            guard
                let current = running.withLock({ state -> Running? in
                    let current = state
                    state = nil
                    return current
                })
            else { return }
            lastPort.withLock { $0 = current.port }
            closeSyncConnections(code: 1001, reason: "GoingAway")
            await current.group.triggerGracefulShutdown()
            let task = current.task
            // Open HTTP keep-alive connections may delay a graceful stop; cancel after a grace period.
            let watchdog = Task {
                try await Task.sleep(for: .seconds(2))
                task.cancel()
            }
            _ = try? await task.value
            watchdog.cancel()
        }
    }

    /// Listens again on the same port after ``stop()`` (or stops first if running), keeping all data.
    public func restart() async throws {
        await stop()
        try await lifecycle.withLock {
            try await listen(port: lastPort.withLock { $0 })
        }
    }

    // MARK: Direct calls (tests, embedding)

    /// Runs a query as the given caller and returns its value.
    /// - Throws: ``ConvexError`` for application errors, ``FunctionFailure`` for other failures.
    public func query(_ path: String, _ args: [String: ConvexValue] = [:], caller: CallerIdentity = .unauthenticated)
        throws -> ConvexValue
    {
        try Self.unwrap(core.engine.runQuery(path: path, args: args, caller: caller))
    }

    /// Runs a mutation and returns its value once committed (subscribers are notified).
    public func mutation(_ path: String, _ args: [String: ConvexValue] = [:], caller: CallerIdentity = .unauthenticated)
        throws -> ConvexValue
    {
        try Self.unwrap(core.engine.runMutation(path: path, args: args, caller: caller))
    }

    /// Runs an action and returns its value.
    public func action(_ path: String, _ args: [String: ConvexValue] = [:], caller: CallerIdentity = .unauthenticated)
        async throws -> ConvexValue
    {
        try Self.unwrap(await core.engine.runAction(path: path, args: args, caller: caller))
    }

    /// The latest commit timestamp.
    public var latestTimestamp: ConvexTimestamp { core.store.snapshot.ts }

    private static func unwrap(_ outcome: FunctionOutcome) throws -> ConvexValue {
        switch outcome.result {
        case .success(let value): return value
        case .failure(let e):
            if e.kind == .convexError, let data = e.errorData { throw ConvexError(data) }
            throw FunctionFailure(message: e.detail)
        }
    }

    // MARK: Server

    private func listen(port: Int) async throws {
        let router = Router(context: BasicRequestContext.self)
        HTTPAPI(core: core).addRoutes(to: router)
        let core = self.core
        let logger = self.logger
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(
                configuration: .init(
                    ws: WebSocketServerConfiguration(
                        maxFrameSize: SyncConnection.maxMessageSize, autoPing: .disabled, closeTimeout: .seconds(5)))
            ) { head, _, logger in
                guard Self.isSyncPath(head.path ?? "") else { return .dontUpgrade }
                return .upgrade([:]) { inbound, outbound, _ in
                    let connection = SyncConnection(core: core, logger: logger)
                    await connection.run(inbound: inbound, outbound: outbound)
                }
            },
            configuration: .init(address: .hostname(configuration.host, port: port), serverName: nil),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? port)
                portContinuation.finish()
            },
            logger: logger
        )
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task {
            defer { portContinuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            // The server stopped before listening: surface its error.
            try await task.value
            throw LocalDeploymentError(message: "The server stopped before it started listening")
        }
        running.withLock { $0 = Running(task: task, group: group, port: bound) }
        lastPort.withLock { $0 = bound }
        logger.debug("Local deployment listening", metadata: ["port": "\(bound)"])
    }

    /// `/api/sync` or `/api/<version>/sync`, with or without a query string.
    static func isSyncPath(_ path: String) -> Bool {
        let pathOnly = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let parts = pathOnly.split(separator: "/", omittingEmptySubsequences: true)
        if parts == ["api", "sync"] { return true }
        return parts.count == 3 && parts[0] == "api" && parts[2] == "sync"
    }
}

/// Runs `body` with a deployment started on `configuration` (default: 127.0.0.1, any free port) and always shuts it
/// down afterwards.
public func withLocalDeployment<R: Sendable>(
    _ configuration: LocalDeployment.Configuration = .init(port: 0), functions: FunctionRegistry = FunctionRegistry(),
    logger: Logger = Logger(label: "convex-local"), _ body: (LocalDeployment) async throws -> R
) async throws -> R {
    let deployment = try await LocalDeployment.start(configuration, functions: functions, logger: logger)
    do {
        let result = try await body(deployment)
        await deployment.shutdown()
        return result
    } catch {
        await deployment.shutdown()
        throw error
    }
}
