import Convex

extension GatewayError.Code {
    /// The gateway has an API key and the request's `X-API-Key` is missing or wrong.
    package static let invalidAPIKey = Self(rawValue: "InvalidAPIKey")
    /// CORS is on and the request's `Origin` is not allowed.
    package static let originNotAllowed = Self(rawValue: "OriginNotAllowed")
    /// The client's rate limit is used up.
    package static let rateLimited = Self(rawValue: "RateLimited")
}

extension GatewayError {
    static func invalidAPIKey(missing: Bool) -> GatewayError {
        GatewayError(
            status: 401, code: .invalidAPIKey,
            message: missing
                ? "This gateway requires an API key in the \(AccessConfiguration.apiKeyHeader) header"
                : "The API key in the \(AccessConfiguration.apiKeyHeader) header is not valid",
            headers: [("WWW-Authenticate", #"APIKey header="\#(AccessConfiguration.apiKeyHeader)""#)])
    }

    static func originNotAllowed(_ origin: String) -> GatewayError {
        GatewayError(
            status: 403, code: .originNotAllowed,
            message: "Origin '\(printable(origin))' is not allowed to use this gateway")
    }

    static func rateLimited(retryAfter: Int) -> GatewayError {
        GatewayError(
            status: 429, code: .rateLimited,
            message: "Too many requests from this address; retry in \(retryAfter) s",
            headers: [("Retry-After", String(retryAfter))])
    }
}

/// What the access stage decided about a request.
enum AccessDecision {
    /// The request may go on; `headers` (CORS) go on every answer to it, streams and errors included.
    case proceed(headers: [(String, String)])
    /// Answer this instead: a CORS preflight's 204 or a refusal (its CORS headers included).
    case answer(GatewayResponse)
}

/// The access stage, in the order a request meets it: CORS origin and preflight, API key, per-client rate limit.
/// Full handling and the hot `GET` path both ask ``decide(method:path:remoteAddress:header:)``, so the two can never
/// disagree. The function allowlist and denylist act at the upstream boundary (``FilteredUpstream``), so a refused
/// function is indistinguishable from an unknown one.
package final class AccessControl: Sendable {
    package let configuration: AccessConfiguration
    let rateLimiter: RateLimiter?

    package init(configuration: AccessConfiguration, clock: GatewayClock = .continuous) {
        self.configuration = configuration
        rateLimiter =
            configuration.rateLimit > 0
            ? RateLimiter(rate: configuration.rateLimit, burst: configuration.effectiveBurst, clock: clock) : nil
    }

    /// Routes that never need the API key: probes, the public contract, the browser client, and CORS preflights.
    static let openPaths: Set<Substring> = ["/healthz", "/readyz", "/openapi.yaml", "/client.js"]

    /// Decides whether a request may go on, from its method, raw path, client address and headers alone (`header`
    /// looks a header up by name, case-insensitively). Never blocks; counts the request against the rate limit.
    func decide(
        method: String, path: Substring, remoteAddress: @autoclosure () -> String?, header: (String) -> String?
    ) -> AccessDecision {
        let cors = configuration.cors
        var headers: [(String, String)] = []
        if cors.isEnabled, let origin = header("Origin") {
            guard cors.allows(origin: origin) else { return .answer(refusal(.originNotAllowed(origin))) }
            headers = cors.responseHeaders(origin: origin)
            if method == "OPTIONS" {
                var preflight = cors.preflightResponse()
                preflight.headers += headers
                return .answer(preflight)
            }
        } else if method == "OPTIONS" && cors.isEnabled {
            return .answer(cors.preflightResponse())
        }
        if let key = configuration.apiKey, !Self.openPaths.contains(path) {
            guard let given = header(AccessConfiguration.apiKeyHeader) else {
                return .answer(refusal(.invalidAPIKey(missing: true), headers: headers))
            }
            guard key.matches(given.utf8) else {
                return .answer(refusal(.invalidAPIKey(missing: false), headers: headers))
            }
        }
        if let rateLimiter, Self.isFunctionRoute(path), let retryAfter = rateLimiter.admit(remoteAddress()) {
            return .answer(refusal(.rateLimited(retryAfter: retryAfter), headers: headers))
        }
        return .proceed(headers: headers)
    }

    /// ``decide(method:path:remoteAddress:header:)`` for a request the server has read whole.
    func decide(_ request: GatewayRequest) -> AccessDecision {
        decide(
            method: request.method, path: request.rawPath[...], remoteAddress: request.remoteAddress,
            header: request.header)
    }

    /// Wraps an upstream so refused functions look unknown; returns it unchanged when every function is allowed.
    package func filter(_ upstream: any ConvexUpstream) -> any ConvexUpstream {
        configuration.functions.isOpen ? upstream : FilteredUpstream(base: upstream, filter: configuration.functions)
    }

    /// The routes the rate limit counts: the function routes and the ticket route.
    static func isFunctionRoute(_ path: Substring) -> Bool {
        path.hasPrefix("/query/") || path.hasPrefix("/mutation/") || path.hasPrefix("/action/")
            || path.hasPrefix("/subscribe/") || path == "/subscribe" || path == "/stream-tickets"
    }

    private func refusal(_ error: GatewayError, headers: [(String, String)] = []) -> GatewayResponse {
        // Refusals are rendered without a value, so the output mode does not matter.
        var response = GatewayResponse.error(error) { $0.convexJSON() }
        response.headers += headers
        return response
    }
}
