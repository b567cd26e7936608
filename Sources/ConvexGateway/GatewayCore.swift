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
/// 4. dispatch (Pipeline/Dispatch.swift) to the stage of the route kind: Queries, BatchQuery, Calls, Streams,
///    SystemRoutes (Pipeline/), or the hot answer (HotQueries.swift);
/// 5. complete (Pipeline/Finish.swift): the representation, CORS headers and metrics of every answer, errors and
///    stream starts included; no stage finishes a response itself.
package final class GatewayCore: Sendable {
    package let configuration: GatewayConfiguration
    /// The one clock every stage reads time from (keep-warm, idle connections, rate limit, spec refresh).
    package let clock: GatewayClock
    package let metrics: GatewayMetrics
    package let hub: SubscriptionHub
    package let pool: UpstreamPool
    /// API key, CORS, rate limit and function allow/deny lists (Access/).
    package let access: AccessControl
    let logger: Logger
    let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    let openAPIDocument: [UInt8]?
    /// Typed inputs (Typed/): the deployment's function spec, when configured.
    package let functionSpecs: FunctionSpecStore?
    /// Remembered hot `GET` targets (HotQueries.swift).
    let hotQueries: HotQueries
    /// The event streams open now (Streams/), for heartbeats and the open-streams metric.
    let openStreams: OpenStreams
    /// Where callers' tokens come from: header, stream ticket, cookie (Access/CallerCredentials.swift).
    let credentials: CallerCredentials
    /// The newest commit among the mutations this gateway answered (read-your-writes, Pipeline/SnapshotFloor.swift).
    let lastCommit = CommitWatermark()

    package init(
        configuration: GatewayConfiguration,
        logger: Logger,
        clock: GatewayClock = .continuous,
        render: @escaping @Sendable (ConvexValue, OutputFormat) -> [UInt8],
        upstreamFactory: @escaping @Sendable (UpstreamIdentity, GatewayMetrics) -> any ConvexUpstream
    ) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.render = render
        let metrics = GatewayMetrics()
        self.metrics = metrics
        self.hotQueries = HotQueries(metrics: metrics)
        self.openStreams = OpenStreams(metrics: metrics)
        self.hub = SubscriptionHub(
            keepWarm: configuration.keepWarm, maxSubscriptions: configuration.maxSubscriptions, metrics: metrics,
            logger: logger, clock: clock, render: render)
        let access = AccessControl(configuration: configuration.access, clock: clock)
        self.access = access
        // Wall-clock time moves with the injected clock, so tests can advance past a ticket's expiry.
        let wallClockOrigin = Int64(Date().timeIntervalSince1970 * 1000) - clock.now.milliseconds
        self.credentials = CallerCredentials(
            cookieName: configuration.access.authCookie,
            tickets: StreamTickets(
                key: configuration.access.ticketKey ?? .random(), maxLifetime: configuration.access.ticketMaxLifetime),
            now: { wallClockOrigin + clock.now.milliseconds })
        self.pool = UpstreamPool(idleTimeout: configuration.identityIdleTimeout, logger: logger, clock: clock) {
            identity in
            access.filter(upstreamFactory(identity, metrics))
        }
        self.openAPIDocument = configuration.openAPIFile.flatMap { FileManager.default.contents(atPath: $0) }.map {
            Array($0)
        }
        // Typed inputs (Typed/): fetch the function spec once at start.
        self.functionSpecs = configuration.functionSpec.map {
            FunctionSpecStore(source: $0, logger: logger, clock: clock)
        }
        functionSpecs?.start()
    }

    /// Handles a request. Runs on the HTTP server's thread: it never blocks, and answers a `GET` of a live
    /// subscription's result at once.
    package func handle(_ request: GatewayRequest) -> GatewayHandling {
        var context = ResponseContext(
            template: Route.template(rawPath: request.rawPath[...]), startedAt: request.startedAt, headers: [],
            representation: RepresentationPreferences(method: request.method, header: request.header))
        switch access.decide(request) {
        case .answer(let response):
            return complete(.respond(response), context)
        case .proceed(let headers):
            context.headers = headers
        }
        let parsed: ParsedRequest
        do {
            parsed = try ParsedRequest(request, defaultFormat: configuration.defaultFormat, credentials: credentials)
        } catch {
            return complete(.respond(errorResponse(error, format: configuration.defaultFormat)), context)
        }
        // Typed inputs (Typed/): function calls and the functions document wait for the first function spec fetch.
        if let specs = functionSpecs, specs.firstFetchPending, parsed.usesFunctionSpec {
            return complete(
                .deferred { [self, context] in
                    await specs.waitForFirstFetch()
                    switch dispatch(parsed, context) {
                    case .respond(let response): return .response(response)
                    case .deferred(let next): return await next()
                    }
                }, context)
        }
        return complete(dispatch(parsed, context), context)
    }
}
