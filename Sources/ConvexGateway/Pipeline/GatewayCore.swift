import Convex
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging

/// The gateway's behaviour, independent of the HTTP server, as one pipeline (Pipeline/):
///
/// 1. access (Access/AccessControl.swift): CORS, API key, rate limit;
/// 2. parse once (Pipeline/ParsedRequest.swift): route and function path, query string, format, and the caller
///    identity from the `Authorization` header, a stream ticket or the auth cookie (Access/CallerCredentials.swift);
/// 3. typed arguments (Pipeline/ArgumentStage.swift), consulting the function spec (Typed/);
/// 4. dispatch (Pipeline/Dispatch.swift) to the stage of the request's row in the route table, each stage a type with
///    its own dependencies in a file named for what it serves: ``Queries``, ``BatchQueries``, ``Calls``, ``Streams``,
///    ``SystemRoutes`` (Pipeline/); a `GET` of a remembered target is answered before all of this by the ``HotPath``
///    stage;
/// 5. complete (Pipeline/Finish.swift): every stage returns a ``GatewayAnswer`` or throws a ``GatewayError``; the one
///    completion makes either the response, with its representation, CORS headers and metrics.
package final class GatewayCore: Sendable {
    package let configuration: GatewayConfiguration
    /// The one clock every stage reads time from (keep-warm, idle connections, rate limit, spec refresh).
    package let clock: GatewayClock
    package let metrics: GatewayMetrics
    /// One line per answered request at `info` (Basics/AccessLog.swift).
    let accessLog: AccessLog
    /// Each request's W3C trace, for its log lines and, with `--otlp-endpoint`, its exported span (Tracing/).
    package let tracing: RequestTracing
    /// What the stages share, built once (``StageDependencies``).
    let shared: StageDependencies
    /// The event streams open now (Streams/), for heartbeats and the open-streams metric.
    let openStreams: OpenStreams
    /// Where callers' tokens come from: header, stream ticket, cookie (Access/CallerCredentials.swift).
    let credentials: CallerCredentials
    /// How a caller's answers may be cached (Access/CallerCaching.swift).
    let callerCaching: CallerCaching

    // The stages (Pipeline/) the route table's rows call, and the hot path before them.
    let queries: Queries
    let batchQueries: BatchQueries
    let calls: Calls
    let streams: Streams
    let systemRoutes: SystemRoutes
    /// The hot path (Pipeline/HotPath.swift), with the `GET` targets it remembers.
    let hotPath: HotPath

    package var hub: SubscriptionHub { shared.hub }
    package var pool: UpstreamPool { shared.pool }
    /// API key, CORS, rate limit and function allow/deny lists (Access/).
    package var access: AccessControl { shared.access }
    /// Typed inputs (Typed/): the deployment's function spec, when configured.
    package var functionSpecs: FunctionSpecStore? { shared.functionSpecs }
    /// The typed-arguments stage (Pipeline/ArgumentStage.swift).
    var arguments: TypedArguments { shared.arguments }

    package init(
        configuration: GatewayConfiguration,
        logger: Logger,
        clock: GatewayClock = .continuous,
        render: @escaping @Sendable (ConvexValue, OutputFormat) -> [UInt8],
        fanOutThreads: Int = 1,
        upstreamFactory: @escaping @Sendable (UpstreamIdentity, GatewayMetrics) -> any ConvexUpstream
    ) {
        self.configuration = configuration
        self.clock = clock
        let accessLog = AccessLog(logger: logger, mode: configuration.accessLog)
        self.accessLog = accessLog
        let metrics = GatewayMetrics(build: configuration.build)
        self.metrics = metrics
        self.tracing = Self.tracing(configuration, logsTraces: accessLog.isOn, metrics, logger, clock)
        self.openStreams = OpenStreams(metrics: metrics, perClient: configuration.effectiveMaxStreamsPerClient)
        let shared = Self.stageDependencies(
            configuration, metrics: metrics, logger: logger, clock: clock, render: render,
            fanOutThreads: fanOutThreads, upstreamFactory: upstreamFactory)
        self.shared = shared
        self.credentials = CallerCredentials(
            cookieName: configuration.access.authCookie,
            tickets: StreamTickets(
                key: configuration.access.ticketKey ?? .random(), maxLifetime: configuration.access.ticketMaxLifetime),
            now: { clock.wallMilliseconds },
            clients: ClientIdentification(trustedProxies: configuration.access.trustedProxies))
        self.callerCaching = CallerCaching(authCookie: configuration.access.authCookie)
        let calls = Calls(
            pool: shared.pool, readYourWrites: shared.readYourWrites, functionSpecs: shared.functionSpecs,
            configuration: configuration, render: render, logger: logger,
            running: ClientShares(limit: configuration.maxCallsPerClient),
            actionsPerConnection: Shares(limit: configuration.maxActionsPerConnection))
        self.calls = calls
        (queries, batchQueries, hotPath) = Self.queryStages(shared, calls: calls, metrics, accessLog, tracing, clock)
        self.streams = Streams(
            hub: shared.hub, pool: shared.pool, access: shared.access, openStreams: openStreams,
            readYourWrites: shared.readYourWrites, arguments: shared.arguments, configuration: configuration,
            logger: logger)
        self.systemRoutes = SystemRoutes(
            metrics: metrics, pool: shared.pool, credentials: credentials, functionSpecs: shared.functionSpecs,
            functionFilter: configuration.access.functions, openAPIDocument: Self.openAPIDocument(configuration))
        shared.functionSpecs?.start()
    }

    /// What the stages share, built once and read by each stage for its part: the configuration, the subscription
    /// hub, the upstream pool, the access stage, the function spec, read-your-writes, the typed-arguments stage, the
    /// rendering of values and the log.
    struct StageDependencies: Sendable {
        let configuration: GatewayConfiguration
        let hub: SubscriptionHub
        let pool: UpstreamPool
        let access: AccessControl
        let functionSpecs: FunctionSpecStore?
        let readYourWrites: ReadYourWrites
        let arguments: TypedArguments
        let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]
        let logger: Logger
    }

    /// The subscription hub, the upstream pool (its upstreams behind the function filter), the access stage, the
    /// function spec (Typed/, fetched once at start), read-your-writes and the typed-arguments stage.
    private static func stageDependencies(
        _ configuration: GatewayConfiguration, metrics: GatewayMetrics, logger: Logger, clock: GatewayClock,
        render: @escaping @Sendable (ConvexValue, OutputFormat) -> [UInt8], fanOutThreads: Int,
        upstreamFactory: @escaping @Sendable (UpstreamIdentity, GatewayMetrics) -> any ConvexUpstream
    ) -> StageDependencies {
        let hub = SubscriptionHub(
            keepWarm: configuration.keepWarm, maxSubscriptions: configuration.maxSubscriptions,
            maxSubscriptionsPerCaller: configuration.effectiveMaxSubscriptionsPerCaller, metrics: metrics,
            logger: logger, clock: clock, fanOutThreads: fanOutThreads, render: render)
        let access = AccessControl(
            configuration: configuration.access, listenHost: configuration.host, clock: clock, metrics: metrics,
            logger: logger)
        let pool = UpstreamPool(
            idleTimeout: configuration.identityIdleTimeout, maxIdentities: configuration.effectiveMaxIdentities,
            maxIdentitiesPerAddress: configuration.effectiveMaxIdentitiesPerClient, logger: logger, clock: clock
        ) { identity in
            access.filter(upstreamFactory(identity, metrics))
        }
        let functionSpecs = configuration.functionSpec.map {
            FunctionSpecStore(source: $0, logger: logger, clock: clock)
        }
        return StageDependencies(
            configuration: configuration, hub: hub, pool: pool, access: access, functionSpecs: functionSpecs,
            readYourWrites: ReadYourWrites(
                hub: hub, followsCommits: configuration.readYourWrites, connectTimeout: configuration.connectTimeout,
                upstreamTimeout: configuration.upstreamTimeout, logger: logger),
            arguments: TypedArguments(
                functionSpecs: functionSpecs, functions: configuration.access.functions,
                maxBodyBytes: configuration.maxBodyBytes),
            render: render, logger: logger)
    }

    /// The stages that read queries: one query, a batch, and the hot path, which answers the targets that the first
    /// remembers.
    private static func queryStages(
        _ shared: StageDependencies, calls: Calls, _ metrics: GatewayMetrics, _ accessLog: AccessLog,
        _ tracing: RequestTracing, _ clock: GatewayClock
    ) -> (Queries, BatchQueries, HotPath) {
        let configuration = shared.configuration
        let hotTargets = HotPath.Targets(metrics: metrics, authCookie: configuration.access.authCookie)
        // Long-polls hold a connection as a stream does: each client may hold as many waiting as it may streams.
        let longPolls = ClientShares(limit: configuration.effectiveMaxStreamsPerClient)
        let queries = Queries(
            hub: shared.hub, pool: shared.pool, readYourWrites: shared.readYourWrites, calls: calls,
            hotTargets: hotTargets, configuration: configuration, render: shared.render, logger: shared.logger,
            longPolls: longPolls)
        let batchQueries = BatchQueries(
            hub: shared.hub, pool: shared.pool, access: shared.access, readYourWrites: shared.readYourWrites,
            arguments: shared.arguments, configuration: configuration, render: shared.render, logger: shared.logger,
            longPolls: longPolls)
        let hotPath = HotPath(
            targets: hotTargets, access: shared.access, hub: shared.hub, queries: queries,
            readYourWrites: shared.readYourWrites, functionSpecs: shared.functionSpecs,
            maxWaitSeconds: configuration.maxWaitSeconds, metrics: metrics, clock: clock, accessLog: accessLog,
            tracing: tracing)
        return (queries, batchQueries, hotPath)
    }

    /// Each request's trace, exported with `--otlp-endpoint` (Tracing/).
    private static func tracing(
        _ configuration: GatewayConfiguration, logsTraces: Bool, _ metrics: GatewayMetrics, _ logger: Logger,
        _ clock: GatewayClock
    ) -> RequestTracing {
        RequestTracing(
            logsTraces: logsTraces,
            exporter: configuration.otlpEndpoint.map {
                SpanExporter(
                    endpoint: $0, serviceVersion: configuration.build.version, logger: logger, metrics: metrics,
                    clock: clock)
            }, clock: clock)
    }

    /// The document served at `/openapi.yaml`: `--openapi-file`'s, read once, else the built-in one if served.
    private static func openAPIDocument(_ configuration: GatewayConfiguration) -> [UInt8]? {
        configuration.openAPIFile.flatMap { FileManager.default.contents(atPath: $0) }.map { Array($0) }
            ?? (configuration.servesBuiltInOpenAPI ? BuiltInOpenAPI.document : nil)
    }

    /// Handles a request. Runs on the HTTP server's thread: it never blocks, and answers a `GET` of a live
    /// subscription's result at once.
    package func handle(_ request: GatewayRequest) -> GatewayAnswer {
        let parsed: ParsedRequest
        let context: ResponseContext
        switch accessAndParse(request) {
        case .refused(let response): return .now(response)
        case .admitted(let request, let requestContext): (parsed, context) = (request, requestContext)
        }
        // Typed inputs (Typed/): function calls and the functions document wait for the first function spec fetch.
        if let specs = functionSpecs, specs.firstFetchPending, parsed.usesFunctionSpec {
            let outcome = GatewayAnswer.later { [self, context] () async throws(GatewayError) -> GatewayOutcome in
                await specs.waitForFirstFetch()
                switch try dispatch(parsed, context) {
                case .now(let response): return .response(response)
                case .later(let next): return try await next()
                }
            }
            return complete(.success(outcome), format: parsed.format, context)
        }
        let outcome: Result<GatewayAnswer, GatewayError>
        do throws(GatewayError) {
            outcome = .success(try dispatch(parsed, context))
        } catch {
            outcome = .failure(error)
        }
        return complete(outcome, format: parsed.format, context)
    }

    /// What the access and parse stages make of a request.
    enum Admission {
        /// The completed answer that refuses it (or a CORS preflight's).
        case refused(GatewayResponse)
        /// It goes on, parsed, with the context its answer is completed in.
        case admitted(ParsedRequest, ResponseContext)
    }

    /// The access and parse stages, which read the request's head alone: ``admit(_:)`` asks them before a body is
    /// read, ``handle(_:)`` again once it has been.
    func accessAndParse(_ request: GatewayRequest) -> Admission {
        // The route is parsed once: its template labels the metrics, its access class the access stage's decision
        // (a function route with a bad function path is still a function call), and its error, if any, is the
        // parse stage's to answer.
        let route = Result { () throws(GatewayError) -> Route in try Route(rawPath: request.rawPath[...]) }
        let matched = try? route.get()
        var context = ResponseContext(
            template: matched?.template ?? "unmatched", startedAt: clock.now, headers: [],
            representation: RepresentationPreferences(method: request.method, header: request.header),
            method: request.method, function: matched?.function, trace: tracing.start(request.header))
        context.upstreamTime = tracing.upstreamTime(for: context.trace)
        let accessClass = matched?.accessClass ?? Route.accessClass(rawPath: request.rawPath[...])
        switch access.decide(request, accessClass: accessClass) {
        case .answer(let response):
            return .refused(completed(response, context))
        case .proceed(let headers):
            context.headers = headers
        }
        do {
            let parsed = try ParsedRequest(
                request, route: route.get(), defaultFormat: configuration.defaultFormat, credentials: credentials)
            if parsed.route.actsForCaller { context.callerHeaders = callerCaching.headers(for: parsed.identity) }
            context.signedIn = parsed.identity != .anonymous
            return .admitted(parsed, context)
        } catch {
            return .refused(completed(errorResponse(error, format: configuration.defaultFormat), context))
        }
    }

    /// Admission from the head: a request that sends a body is judged by the access and parse stages from its line and
    /// header fields alone (`request.bodyPending`), before the server reads a byte of its body (the API key, CORS,
    /// the rate limit, the cross-site check, the route, method, format and credentials). Returns the answer that
    /// refuses it, which the server sends without reading the body, so a refused request holds no part of the bound
    /// on bodies in flight; `nil` to read the body and handle the request (``handle(_:)``, which does not count it
    /// against the rate limit again). The function lists are not asked here: a refused function is answered as an
    /// unknown one is, after its arguments (``AccessControl/filter(_:)``).
    package func admit(_ request: GatewayRequest) -> GatewayResponse? {
        guard case .refused(let response) = accessAndParse(request) else { return nil }
        return response
    }

    /// Sends the heartbeat comment to every open stream.
    package func sendHeartbeats() {
        openStreams.heartbeat()
    }
}
