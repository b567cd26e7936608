extension GatewayError.Code {
    /// The gateway has an API key and the request's `X-API-Key` is missing or wrong.
    public static let invalidAPIKey = Self(rawValue: "InvalidAPIKey")
    /// CORS is on and the request's `Origin` is not allowed.
    public static let originNotAllowed = Self(rawValue: "OriginNotAllowed")
    /// The client's rate limit is used up.
    public static let rateLimited = Self(rawValue: "RateLimited")
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

/// The access controls in the order a request meets them: CORS origin and preflight, API key, per-client rate
/// limit, then a check that the query string decodes to UTF-8 (see ``QueryText``). The function allowlist and denylist act at the upstream boundary (``FilteredUpstream``), so a refused
/// function is indistinguishable from an unknown one.
public final class AccessControl: Sendable {
    public let configuration: AccessConfiguration
    let rateLimiter: RateLimiter?

    public init(configuration: AccessConfiguration) {
        self.configuration = configuration
        rateLimiter =
            configuration.rateLimit > 0
            ? RateLimiter(rate: configuration.rateLimit, burst: configuration.effectiveBurst) : nil
    }

    /// Routes that never need the API key: probes, the public contract, and CORS preflights.
    static let openPaths: Set<String> = ["/healthz", "/readyz", "/openapi.yaml"]

    /// Decides whether the request may go on. Returns the answer to send instead (a preflight's 204 or a refusal),
    /// or `nil` to continue with normal handling. Never blocks.
    public func screen(_ request: GatewayRequest) -> GatewayResponse? {
        let cors = configuration.cors
        if cors.isEnabled, let origin = request.header("origin"), !cors.allows(origin: origin) {
            return refusal(.originNotAllowed(origin))
        }
        if request.method == "OPTIONS" && cors.isEnabled {
            return cors.preflightResponse()
        }
        if let key = configuration.apiKey, !Self.openPaths.contains(request.rawPath) {
            guard let given = request.header(AccessConfiguration.apiKeyHeader.lowercased()) else {
                return refusal(.invalidAPIKey(missing: true))
            }
            guard key.matches(given.utf8) else { return refusal(.invalidAPIKey(missing: false)) }
        }
        if let rateLimiter, Self.isFunctionRoute(request.rawPath),
            let retryAfter = rateLimiter.admit(request.remoteAddress)
        {
            return refusal(.rateLimited(retryAfter: retryAfter))
        }
        if let invalid = QueryText.validate(request.rawQuery) {
            return refusal(invalid)
        }
        return nil
    }

    /// Whether a per-request control (the rate limit) must see every request, so no answer may skip ``screen(_:)``.
    var screensEveryRequest: Bool { rateLimiter != nil }

    /// Whether ``screen(_:)`` would let a request with these headers through, on a function route, and
    /// ``responseHeaders(for:)`` would add nothing — judged from the headers alone, for the hot `GET` path, which
    /// answers before a ``GatewayRequest`` exists (HotQueries.swift). A control added to `screen` belongs here too.
    /// The query string is not judged: the hot path only answers targets full handling has already accepted.
    func passesUnchanged(header: (String) -> String?) -> Bool {
        if screensEveryRequest { return false }
        if configuration.cors.isEnabled && header("Origin") != nil { return false }
        if let key = configuration.apiKey {
            guard let given = header(AccessConfiguration.apiKeyHeader), key.matches(given.utf8) else { return false }
        }
        return true
    }

    /// Headers to add to every answer to `request` (CORS), streams included.
    public func responseHeaders(for request: GatewayRequest) -> [(String, String)] {
        let cors = configuration.cors
        guard cors.isEnabled, let origin = request.header("origin"), cors.allows(origin: origin) else { return [] }
        return cors.responseHeaders(origin: origin)
    }

    /// Wraps an upstream so refused functions look unknown; returns it unchanged when every function is allowed.
    public func filter(_ upstream: any ConvexUpstream) -> any ConvexUpstream {
        configuration.functions.isOpen ? upstream : FilteredUpstream(base: upstream, filter: configuration.functions)
    }

    static func isFunctionRoute(_ path: String) -> Bool {
        path.hasPrefix("/query/") || path.hasPrefix("/mutation/") || path.hasPrefix("/action/")
            || path.hasPrefix("/subscribe/")
    }

    private func refusal(_ error: GatewayError) -> GatewayResponse {
        // Refusals are rendered without a value, so the output mode does not matter.
        GatewayResponse(
            status: error.status, headers: [("Content-Type", "application/json")] + error.headers,
            body: error.body { $0.convexJSON() })
    }
}
