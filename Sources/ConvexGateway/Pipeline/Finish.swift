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
    /// The last stage of every response, errors and hot answers included: picks the representation (304, gzip:
    /// Representation.swift), adds the access stage's headers and records the request's metrics.
    func finish(_ response: GatewayResponse, _ context: ResponseContext) -> GatewayResponse {
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
