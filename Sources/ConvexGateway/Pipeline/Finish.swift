import ConvexSyncProtocol
import ConvexValues
import HTTPFields

/// What completing a response needs of its request: the route template (the metrics label), when the request
/// started, the access stage's headers (CORS), and the representation it asks for (gzip, `If-None-Match`).
struct ResponseContext: Sendable {
    var template: String
    /// On the gateway's clock (``GatewayClock``), as the request's duration is measured.
    var startedAt: Duration
    var headers: [(String, String)]
    var representation = RepresentationPreferences.identity
    /// On a route that acts for its caller, how its answers may be cached (``CallerCaching``): added to every
    /// response after the access stage's headers, as the hot path adds them; a response that says its own
    /// `Cache-Control` keeps it.
    var callerHeaders: [(String, String)] = []
    /// For the access log: the method, the function the path named, and whether the caller signed in (`nil` until the
    /// parse stage has read the credentials).
    var method = "GET"
    var function: UdfPath?
    var signedIn: Bool?
    /// The request's trace, when tracing is on (Tracing/RequestTracing.swift), and where its calls' upstream time is
    /// summed when its span is exported.
    var trace: RequestTrace?
    var upstreamTime: UpstreamTime?
}

extension GatewayCore {
    /// The one completion of every request, whatever the stage that answered it: a stage's outcome, or the error it
    /// threw rendered in `format`, becomes the response, with its representation (304, gzip: ConditionalGetAndGzip/),
    /// the access stage's headers (CORS) and its metrics; an answer that comes later gets the same when it comes; an
    /// event stream gets the access stage's headers and is counted as a 200 when it starts. No stage completes a
    /// response itself.
    func complete(
        _ outcome: Result<GatewayAnswer, GatewayError>, format: OutputFormat, _ context: ResponseContext
    ) -> GatewayAnswer {
        switch outcome {
        case .failure(let error):
            return .now(completed(errorResponse(error, format: format), context))
        case .success(.now(let response)):
            return .now(completed(response, context))
        case .success(.later(let answer)):
            return .later { [self] () async throws(GatewayError) -> GatewayOutcome in
                let outcome: GatewayOutcome
                switch await Self.traced(context, answer) {
                case .success(let answered): outcome = answered
                case .failure(let error): return .response(completed(errorResponse(error, format: format), context))
                }
                switch outcome {
                case .response(let response):
                    return .response(completed(response, context))
                case .stream(var start):
                    start.headers += context.headers
                    let duration = clock.now - context.startedAt
                    metrics.recordRequest(route: context.template, status: 200, duration: duration)
                    if accessLog.isOn { logStream(&start, context, duration: duration) }
                    tracing.answered(
                        context.trace, method: context.method, route: context.template, status: 200,
                        function: context.function?.description, duration: duration, upstream: context.upstreamTime)
                    return .stream(start)
                }
            }
        }
    }

    /// A response given now, completed: its representation, the access stage's headers and its metrics (the access
    /// stage's and the hot path's refusals too).
    func completed(_ response: GatewayResponse, _ context: ResponseContext) -> GatewayResponse {
        Self.completed(response, context, metrics: metrics, clock: clock, accessLog: accessLog, tracing: tracing)
    }

    /// Runs a later answer with the request's trace bound (``RequestTrace/current``, for the warnings logged on its
    /// behalf) and, when its span is exported, where its upstream time is summed (``UpstreamTime/current``).
    private static func traced(
        _ context: ResponseContext, _ answer: @escaping @Sendable () async throws(GatewayError) -> GatewayOutcome
    ) async -> Result<GatewayOutcome, GatewayError> {
        let run = { () async -> Result<GatewayOutcome, GatewayError> in
            do throws(GatewayError) { return .success(try await answer()) } catch { return .failure(error) }
        }
        guard let trace = context.trace else { return await run() }
        return await RequestTrace.$current.withValue(trace) {
            guard let upstreamTime = context.upstreamTime else { return await run() }
            return await UpstreamTime.$current.withValue(upstreamTime) { await run() }
        }
    }

    /// ``completed(_:_:)`` for a stage that holds no core: the hot path.
    static func completed(
        _ response: GatewayResponse, _ context: ResponseContext, metrics: GatewayMetrics, clock: GatewayClock,
        accessLog: AccessLog, tracing: RequestTracing
    ) -> GatewayResponse {
        var response = response.negotiated(context.representation) {
            response.gzipped ?? ContentCoding.gzip(response.body)
        }
        response.headers += context.headers
        let ownCacheControl = response.header(HeaderName.cacheControl) != nil
        for header in context.callerHeaders where !(ownCacheControl && header.0 == HeaderName.cacheControl) {
            response.headers.append(header)
        }
        let duration = clock.now - context.startedAt
        metrics.recordRequest(route: context.template, status: response.status, duration: duration)
        if accessLog.isOn {
            accessLog.answered(
                method: context.method, route: context.template, function: context.function?.description,
                status: response.status, bytes: response.body.count, duration: duration, signedIn: context.signedIn,
                requestID: accessLog.requestID(), trace: context.trace)
        }
        tracing.answered(
            context.trace, method: context.method, route: context.template, status: response.status,
            function: context.function?.description, duration: duration, upstream: context.upstreamTime)
        return response
    }

    /// The access log's lines of an event stream: its start now, as a 200 with its preamble's bytes, and its end when
    /// the server detaches it, with the same request id.
    private func logStream(_ start: inout EventStreamStart, _ context: ResponseContext, duration: Duration) {
        let requestID = accessLog.requestID()
        let function = context.function?.description
        accessLog.answered(
            method: context.method, route: context.template, function: function, status: 200,
            bytes: start.preamble.count, duration: duration, signedIn: context.signedIn, requestID: requestID,
            trace: context.trace)
        let detach = start.detach
        start.detach = { [accessLog, clock] output in
            detach(output)
            accessLog.streamEnded(
                route: context.template, function: function, lifetime: clock.now - context.startedAt,
                events: output.eventsWritten, signedIn: context.signedIn ?? false, requestID: requestID,
                trace: context.trace)
        }
    }

    /// The answer to a gateway error, `data` rendered in `format`.
    func errorResponse(_ error: GatewayError, format: OutputFormat) -> GatewayResponse {
        GatewayResponse.error(error) { shared.render($0, format) }
    }
}
