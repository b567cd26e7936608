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
                do throws(GatewayError) {
                    outcome = try await answer()
                } catch {
                    return .response(completed(errorResponse(error, format: format), context))
                }
                switch outcome {
                case .response(let response):
                    return .response(completed(response, context))
                case .stream(var start):
                    start.headers += context.headers
                    metrics.recordRequest(route: context.template, status: 200, duration: clock.now - context.startedAt)
                    return .stream(start)
                }
            }
        }
    }

    /// A response given now, completed: its representation, the access stage's headers and its metrics (the access
    /// stage's and the hot path's refusals too).
    func completed(_ response: GatewayResponse, _ context: ResponseContext) -> GatewayResponse {
        Self.completed(response, context, metrics: metrics, clock: clock)
    }

    /// ``completed(_:_:)`` for a stage that holds no core: the hot path.
    static func completed(
        _ response: GatewayResponse, _ context: ResponseContext, metrics: GatewayMetrics, clock: GatewayClock
    ) -> GatewayResponse {
        var response = response.negotiated(context.representation) {
            response.gzipped ?? ContentCoding.gzip(response.body)
        }
        response.headers += context.headers
        let ownCacheControl = response.header(HeaderName.cacheControl) != nil
        for header in context.callerHeaders where !(ownCacheControl && header.0 == HeaderName.cacheControl) {
            response.headers.append(header)
        }
        metrics.recordRequest(
            route: context.template, status: response.status, duration: clock.now - context.startedAt)
        return response
    }

    /// The answer to a gateway error, `data` rendered in `format`.
    func errorResponse(_ error: GatewayError, format: OutputFormat) -> GatewayResponse {
        GatewayResponse.error(error) { render($0, format) }
    }
}
