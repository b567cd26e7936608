import Convex
import ConvexValues
import HTTPFields
import Logging
import MicroHTTPD
import ServiceLifecycle
import Synchronization

/// The HTTP gateway: `GatewayCore` served by libmicrohttpd, with SSE heartbeats and idle upstream clean-up.
///
/// Started, then run: directly, or as a swift-service-lifecycle `Service` in a `ServiceGroup`, which drains it on
/// SIGTERM and SIGINT:
///
/// ```swift
/// let upstreams = try ClientUpstream.factory(deploymentUrl: "http://127.0.0.1:3210", logger: logger)
/// let gateway = Gateway(configuration: GatewayConfiguration(), logger: logger, upstreamFactory: upstreams)
/// try gateway.start()  // listens: `gateway.port` is known from here on
/// try await gateway.run()  // serves until graceful shutdown, cancellation or `shutdown()`
/// ```
public final class Gateway: Sendable {
    package let core: GatewayCore
    private let server: HTTPServer
    private let logger: Logger
    /// Ended when shutdown is asked for (graceful shutdown, cancellation, ``shutdown()``): ``run()`` then drains.
    private let stopRequested = OneShot<Void>()
    /// Ended by ``shutdown()`` after the drain delay: the background loops of ``run()`` end with it.
    private let loopsEnd = OneShot<Void>()
    /// The one run of ``shutdown()``: later and concurrent callers wait for its end.
    private let shutdownRun = Mutex(ShutdownRun.notStarted)
    private let started = Mutex(false)

    private enum ShutdownRun {
        case notStarted
        case running(waiters: [CheckedContinuation<Void, Never>])
        case done
    }

    /// - Parameter clock: where every stage reads time from; tests pass a test clock.
    public init(
        configuration: GatewayConfiguration, logger: Logger, clock: GatewayClock = .continuous,
        upstreamFactory: @escaping @Sendable (UpstreamIdentity, GatewayMetrics) -> any ConvexUpstream
    ) {
        var http = Self.serverLimits(configuration)
        // A change's sends to idle streams are split between as many threads as the server's own.
        let core = GatewayCore(
            configuration: configuration, logger: logger, clock: clock,
            render: { value, format in value.json(mode: format) }, fanOutThreads: http.threadPoolSize,
            upstreamFactory: upstreamFactory)
        self.core = core
        self.logger = logger
        Self.hand(&http, to: core)
        let server = HTTPServer(configuration: http, logger: logger) { request, responder in
            Self.serve(request, responder, core: core)
        }
        self.server = server
        core.metrics.countConnections { server.activeConnectionCount }
    }

    /// The server's address, threads and bounds, as the configuration sets them.
    private static func serverLimits(_ configuration: GatewayConfiguration) -> HTTPServerConfiguration {
        var http = HTTPServerConfiguration(host: configuration.host, port: UInt16(clamping: configuration.port))
        if configuration.threads > 0 { http.threadPoolSize = configuration.threads }
        http.connectionLimit = configuration.maxConnections
        http.maxBodySize = configuration.maxBodyBytes
        http.maxBodyBytesInFlight = configuration.effectiveMaxBodyBytesInFlight
        http.shutdownGracePeriod = configuration.shutdownGracePeriod
        http.connectionMemoryLimit = configuration.access.connectionMemoryLimit
        http.idleTimeoutSeconds = configuration.access.idleTimeoutSeconds
        // Slow and greedy clients (docs/configuration.md, "Limits and fairness").
        http.maxConnectionsPerAddress = configuration.effectiveMaxConnectionsPerClient
        http.maxBodyBytesPerAddress = configuration.effectiveMaxBodyBytesPerClient
        if configuration.headerTimeoutSeconds > 0 { http.headerTimeout = .seconds(configuration.headerTimeoutSeconds) }
        if configuration.bodyTimeoutSeconds > 0 {
            http.minimumBodyRate = (bytes: 1024, per: .seconds(configuration.bodyTimeoutSeconds))
        }
        return http
    }

    /// What the server asks of the core: which requests only read, what the head alone decides, the hot path, and
    /// the answers to the requests the server refuses itself.
    private static func hand(_ http: inout HTTPServerConfiguration, to core: GatewayCore) {
        let configuration = core.configuration
        // A request to a route that reads (a query, also posted: `POST /query/<function>`) only reads: at shutdown it
        // is refused at once, never left to end as an unknown outcome.
        let readMethods = http.onlyReads
        http.onlyReads = { method, path in
            readMethods(method, path) || Route.kind(path: path[...]) == .read
        }
        // A stream ended by shutdown tells its client to connect again soon (to another replica, through a balancer),
        // each after its own short delay so that they do not all come back in the same instant.
        http.streamFarewell = { Array("retry: \(Int.random(in: 50...500))\n\n".utf8) }
        // What the head decides is decided before a body is read (Pipeline/GatewayCore.swift, `admit`).
        http.admission = { head in
            core.admit(
                GatewayRequest(
                    head: head.headers, method: head.method, target: head.target ?? "",
                    remoteAddress: head.remoteAddress, bodyPending: true)
            ).map(HTTPResponse.init)
        }
        if configuration.hotPath {
            http.hotPath = { head in core.hotPath.answer(head) }  // Pipeline/HotPath.swift
        }
        http.rejectionResponse = { rejection in
            HTTPResponse(core.errorResponse(refusal(rejection, configuration), format: configuration.defaultFormat))
        }
    }

    /// The error that answers a request the server refused before the core saw it.
    private static func refusal(
        _ rejection: HTTPServerRejection, _ configuration: GatewayConfiguration
    ) -> GatewayError {
        switch rejection {
        case .payloadTooLarge: .payloadTooLarge(limit: configuration.maxBodyBytes)
        case .connectionLimitReached: .overloaded
        case .bodiesInFlightLimitReached: .bodiesInFlightLimitReached
        case .ambiguousBodyLength:
            .badRequest(
                "The request's body length is ambiguous: Content-Length with Transfer-Encoding, or "
                    + "Content-Lengths that differ")
        case .invalidFieldName, .obsoleteLineFolding, .invalidCharacterInHead, .invalidTransferEncoding,
            .invalidContentLength:
            .badRequest(rejection.message)
        case .unsupportedTransferCoding: GatewayError(code: .notImplemented, message: rejection.message)
        case .headerFieldsTooLarge:
            GatewayError(
                code: .headerFieldsTooLarge,
                message:
                    rejection.message + " (the request line and headers must fit --connection-memory-bytes, "
                    + "\(configuration.access.connectionMemoryLimit) bytes)")
        case .shuttingDown: .shuttingDown
        case .unansweredAtShutdown: .unansweredAtShutdown
        case .requestTimeout:
            GatewayError(
                code: .requestTimeout,
                message:
                    "The request came too slowly: its line and headers must arrive within "
                    + "\(configuration.headerTimeoutSeconds) s of the connection (--header-timeout-seconds), "
                    + "its body at 1 KiB every \(configuration.bodyTimeoutSeconds) s at least "
                    + "(--body-timeout-seconds)")
        case .tooManyConnectionsFromAddress:
            GatewayError(
                code: .tooManyConnections,
                message:
                    "This client address holds \(configuration.effectiveMaxConnectionsPerClient) connections, "
                    + "as many as one address may (--max-connections-per-client); reuse one",
                headers: [(HeaderName.retryAfter, "1")])
        case .bodyShareReached:
            GatewayError(
                code: .tooManyBodyBytes,
                message:
                    "This client address holds \(configuration.effectiveMaxBodyBytesPerClient) bytes of request "
                    + "bodies, as many as one address may (--max-body-bytes-per-client); send it once the "
                    + "others are answered",
                headers: [(HeaderName.retryAfter, "1")])
        default: .internalError
        }
    }

    /// The bound port once started.
    public var port: Int? { server.port }

    /// Request-body bytes held now (`--max-body-bytes-in-flight` bounds them).
    package var bodyBytesInFlight: Int { server.bodyBytesInFlight }

    /// libmicrohttpd's worker threads: `threads`, or one per CPU the process may use (its affinity mask and CPU quota,
    /// not the machine's count).
    public var threadCount: Int { server.configuration.threadPoolSize }

    /// Whether ``start()`` has run.
    var isStarted: Bool { started.withLock { $0 } }

    /// Starts listening; ``run()`` serves.
    /// - Throws: ``CORSOriginError`` for an unsafe CORS policy (``CORSPolicy/check()``), ``PortInUse`` when another
    ///   process listens on the port, or the server's error.
    public func start() throws {
        try core.configuration.access.cors.check()
        do {
            try server.start()
        } catch {
            guard error.message.contains("Address already in use") else { throw error }
            throw PortInUse(host: core.configuration.host, port: core.configuration.port)
        }
        started.withLock { $0 = true }
    }

    /// Graceful shutdown: `/readyz` fails for the drain delay while everything else is served; then the background
    /// loops end, the port stops listening, every stream ends cleanly (with a short `retry:`), waiting reads and new
    /// requests on open connections get 503, running mutations and actions get up to the grace period for their
    /// answers (then 502 `OutcomeUnknown`), and the upstream connections close. Idempotent: later and concurrent
    /// callers wait for the one shutdown.
    public func shutdown() async {
        stopRequested.end(with: ())
        guard await isFirstShutdown() else { return }
        // First out of rotation: `/readyz` fails while everything else is served as before, until a load balancer's
        // health check has noticed (`drainDelay`); then the port closes, streams end and calls finish.
        core.systemRoutes.drain.begin()
        if core.configuration.drainDelay > .zero {
            try? await core.clock.sleep(for: core.configuration.drainDelay)
        }
        loopsEnd.end(with: ())
        await server.shutdown()
        core.hub.shutdown()
        await core.pool.closeAll()
        // The last requests' spans, briefly: a collector that does not answer must not hold up the exit.
        await core.tracing.exporter?.flush(timeout: .seconds(2))
        let waiters = shutdownRun.withLock { run -> [CheckedContinuation<Void, Never>] in
            defer { run = .done }
            if case .running(let waiters) = run { return waiters }
            return []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether this caller runs the shutdown; a later one returns `false` once the first caller's run has ended.
    private func isFirstShutdown() async -> Bool {
        let first = shutdownRun.withLock { run in
            guard case .notStarted = run else { return false }
            run = .running(waiters: [])
            return true
        }
        if first { return true }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let over = shutdownRun.withLock { run in
                guard case .running(let waiters) = run else { return true }
                run = .running(waiters: waiters + [continuation])
                return false
            }
            if over { continuation.resume() }
        }
        return false
    }
}

/// A swift-service-lifecycle `Service`: in a `ServiceGroup`, the gateway serves until the group's graceful shutdown
/// (`convex-gateway` triggers it at SIGTERM or SIGINT), cancellation or ``Gateway/shutdown()``, then drains.
extension Gateway: Service {
    /// Starts the gateway (unless ``start()`` already did) and serves, its background loops children of one task
    /// group, until graceful shutdown, cancellation or ``shutdown()``; then shuts down gracefully. Run once.
    public func run() async throws {
        if !isStarted { try start() }
        async let loops: Void = runBackgroundLoops()
        await untilStopRequested()
        await shutdown()
        await loops
    }

    /// Returns at the group's graceful shutdown, at cancellation, or once ``shutdown()`` has begun.
    private func untilStopRequested() async {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await stopRequested.value()
            } onCancel: { [stopRequested] in
                stopRequested.end(with: ())
            }
        } onGracefulShutdown: { [stopRequested] in
            stopRequested.end(with: ())
        }
    }

    /// The heartbeat, the subscription hub's sweeper, the idle-connection sweeper and the span exporter, each a child
    /// of one task group, which ``shutdown()`` ends after its drain delay.
    private func runBackgroundLoops() async {
        let core = core
        await withDiscardingTaskGroup { group in
            // The anonymous connection, which stays open, starts now: a deployment that is down is then known before
            // the first request would wait for it (Upstream/DeploymentReachability.swift).
            if let (_, anonymous) = try? core.pool.upstream(for: .anonymous) {
                group.addTask { _ = try? await anonymous.waitUntilConnected(timeout: .zero) }
            }
            group.addTask {
                while (try? await core.clock.sleep(for: core.configuration.heartbeatInterval)) != nil {
                    core.sendHeartbeats()
                }
            }
            group.addTask { await core.hub.runSweeper() }
            group.addTask {
                while (try? await core.clock.sleep(for: core.configuration.identityIdleTimeout / 2)) != nil {
                    await core.pool.closeIdle { core.hub.holdsSubscriptions(forIdentity: $0) }
                }
            }
            // With `--otlp-endpoint`, requests' spans are sent in the background (Tracing/SpanExporter.swift).
            if let exporter = core.tracing.exporter {
                group.addTask { await exporter.run() }
            }
            await loopsEnd.value()
            group.cancelAll()
        }
    }
}

extension Gateway {
    /// Hands one request to the core and carries out its answer: now, deferred, or as an event stream.
    fileprivate static func serve(_ request: HTTPRequest, _ responder: HTTPResponder, core: GatewayCore) {
        var gatewayRequest = GatewayRequest(
            head: request.headers, method: request.method, target: request.target ?? request.path,
            remoteAddress: request.remoteAddress, bodyPending: false)
        gatewayRequest.body = request.body
        gatewayRequest.admittedFromHead = request.admittedFromHead
        switch core.handle(gatewayRequest) {
        case .now(let response):
            responder.respond(HTTPResponse(response))
        case .later(let work):
            let task = Task {
                let outcome: GatewayOutcome
                do throws(GatewayError) {
                    outcome = try await work()
                } catch {
                    // `handle` completed every error into a response already; one that came anyway is still answered.
                    outcome = .response(GatewayResponse.error(error) { $0.json(mode: .plain) })
                }
                switch outcome {
                case .response(let response):
                    responder.respond(HTTPResponse(response))
                case .stream(let start):
                    guard let writer = responder.startStream(status: 200, headers: HTTPHeaders(start.headers)) else {
                        start.notStarted()
                        return
                    }
                    writer.write(start.preamble)
                    let output = HTTPEventStreamOutput(writer: writer)
                    // Attached first, so that a stream already over is detached after it, never before.
                    start.attach(output)
                    writer.onClose { _ in start.detach(output) }
                }
            }
            // A long-poll, or a stream waiting for its first results, stops waiting when its client leaves.
            responder.onClientGone { task.cancel() }
        }
    }
}

extension GatewayRequest {
    /// A request as the server read it, without its body: its header fields (the first of each name), the method, and
    /// the target as sent.
    fileprivate init(head: HTTPHeaders, method: String, target: String, remoteAddress: String?, bodyPending: Bool) {
        var headers: [String: String] = [:]
        for field in head where headers[field.name.lowercased()] == nil {
            headers[field.name.lowercased()] = field.value
        }
        let question = target.firstIndex(of: "?")
        self.init(
            method: method, rawPath: String(target[..<(question ?? target.endIndex)]),
            rawQuery: question.map { String(target[target.index(after: $0)...]) }, headers: headers,
            remoteAddress: remoteAddress)
        self.bodyPending = bodyPending
    }
}

extension HTTPResponse {
    init(_ response: GatewayResponse) {
        self.init(status: response.status, headers: HTTPHeaders(response.headers), body: response.body)
    }
}
