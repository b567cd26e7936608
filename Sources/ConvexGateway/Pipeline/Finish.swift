import ConvexValues

/// What finishing a response needs of its request: the route template (the metrics label), when the request
/// started, the access stage's headers (CORS), and the representation it asks for (gzip, `If-None-Match`).
struct ResponseContext: Sendable {
    var template: String
    var startedAt: ContinuousClock.Instant
    var headers: [(String, String)]
    var representation = RepresentationPreferences.identity
}

extension GatewayCore {
    /// The one completion of every request, whatever the stage that answered it: a response gets its representation
    /// (304, gzip: ConditionalGetAndGzip/), the access stage's headers (CORS) and its metrics; a deferred answer gets
    /// the same when it comes; an event stream gets the access stage's headers and is counted as a 200 when it starts.
    /// No stage finishes a response itself.
    func complete(_ handling: GatewayHandling, _ context: ResponseContext) -> GatewayHandling {
        switch handling {
        case .respond(let response):
            return .respond(complete(response, context))
        case .deferred(let answer):
            return .deferred { [self] in
                switch await answer() {
                case .response(let response):
                    return .response(complete(response, context))
                case .stream(var start):
                    start.headers += context.headers
                    metrics.recordRequest(route: context.template, status: 200, duration: .now - context.startedAt)
                    return .stream(start)
                }
            }
        }
    }

    /// ``complete(_:_:)-(GatewayHandling,_)`` of a response given now (the quick responder's refusals too).
    func complete(_ response: GatewayResponse, _ context: ResponseContext) -> GatewayResponse {
        var response = response.negotiated(context.representation) { ContentCoding.gzip(response.body) }
        response.headers += context.headers
        metrics.recordRequest(route: context.template, status: response.status, duration: .now - context.startedAt)
        return response
    }

    /// The answer to a gateway error, `data` rendered in `format`.
    func errorResponse(_ error: GatewayError, format: OutputFormat) -> GatewayResponse {
        GatewayResponse.error(error) { render($0, format) }
    }

    /// The answer to an upstream failure; a failure of no known kind is logged with its detail and answered as a
    /// generic 500.
    func errorResponse(_ failure: UpstreamFailure, format: OutputFormat) -> GatewayResponse {
        if let detail = failure.logDetail {
            logger.error("unexpected upstream failure", metadata: ["error": "\(detail)"])
        }
        return errorResponse(failure.gatewayError, format: format)
    }
}
