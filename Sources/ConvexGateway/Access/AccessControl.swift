import Convex
import HTTPFields
import Logging

extension GatewayError {
    static func invalidAPIKey(missing: Bool) -> GatewayError {
        GatewayError(
            code: .invalidAPIKey,
            message: missing
                ? "This gateway requires an API key in the \(HeaderName.xAPIKey) header"
                : "The API key in the \(HeaderName.xAPIKey) header is not valid",
            headers: [(HeaderName.wwwAuthenticate, #"APIKey header="\#(HeaderName.xAPIKey)""#)])
    }

    static func originNotAllowed(_ origin: String) -> GatewayError {
        GatewayError(
            code: .originNotAllowed,
            message: "Origin '\(printable(origin))' is not allowed to use this gateway")
    }

    static func rateLimited(retryAfter: Int) -> GatewayError {
        GatewayError(
            code: .rateLimited,
            message: "Too many requests from this address; retry in \(retryAfter) s",
            headers: [(HeaderName.retryAfter, String(retryAfter))])
    }
}

/// What the access stage decided about a request.
enum AccessDecision {
    /// The request may go on; `headers` (CORS) go on every answer to it, streams and errors included.
    case proceed(headers: [(String, String)])
    /// Answer this instead: a CORS preflight's 204 or a refusal (its CORS headers included).
    case answer(GatewayResponse)
}

/// The access stage, in the order a request meets it: CORS origin and preflight, API key, per-client rate limit, and
/// for a request that changes state as the auth cookie's user, the cross-site check (``CrossSiteCheck``).
/// Full handling and the hot `GET` path both ask ``decide(method:path:remoteAddress:header:)``, so the two can never
/// disagree (the cross-site check never refuses a `GET`). The function allowlist and denylist act at the upstream
/// boundary (``FilteredUpstream``), so a refused function is indistinguishable from an unknown one.
package final class AccessControl: Sendable {
    package let configuration: AccessConfiguration
    let rateLimiter: RateLimiter?
    /// With an auth cookie, the check that keeps other sites from acting as its user.
    let crossSite: CrossSiteCheck?
    /// The CORS headers for each configured origin, made once from ``CORSPolicy/responseHeaders(origin:)``: an
    /// `Origin` sent exactly as configured is matched by its bytes and gets these, shared rather than rebuilt.
    private let corsHeadersByOrigin: [(origin: [UInt8], headers: [(String, String)])]
    /// With `*` and no credentials, the one set of CORS headers every origin gets.
    private let corsHeadersForAnyOrigin: [(String, String)]?
    /// Names each origin whose pages cannot use the gateway once, with the flag that allows them.
    private let refusedOrigins: RefusedOriginLog
    /// The `Host` values the gateway answers (DNS rebinding).
    let hosts: HostCheck
    /// Wrong API keys by client address: counted, logged, held back.
    private let wrongKeys: WrongAPIKeys
    private let metrics: GatewayMetrics?

    /// - Parameter listenHost: the address the gateway listens on: on a loopback one, only loopback `Host` names are
    ///   answered unless ``AccessConfiguration/allowedHosts`` says otherwise (``HostCheck``).
    package init(
        configuration: AccessConfiguration, listenHost: String? = nil, clock: GatewayClock = .continuous,
        metrics: GatewayMetrics? = nil,
        logger: Logger = Logger(label: "convex-gateway", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.configuration = configuration
        self.metrics = metrics
        wrongKeys = WrongAPIKeys(clock: clock, logger: logger)
        hosts = HostCheck(allowedHosts: configuration.allowedHosts, listenHost: listenHost)
        refusedOrigins = RefusedOriginLog(logger: logger)
        rateLimiter =
            configuration.rateLimit > 0
            ? RateLimiter(rate: configuration.rateLimit, burst: configuration.effectiveBurst, clock: clock) : nil
        let cors = configuration.cors
        crossSite = CrossSiteCheck(cookieName: configuration.authCookie, cors: cors)
        corsHeadersByOrigin = cors.origins.filter { $0 != "*" }.map {
            (Array($0.utf8), cors.responseHeaders(origin: $0))
        }
        corsHeadersForAnyOrigin =
            cors.origins.contains("*") && !cors.allowCredentials ? cors.responseHeaders(origin: "*") : nil
    }

    /// Decides whether a request may go on, from its method, its route's access class (``AccessClass``: the API
    /// key, the rate limit), client address and header fields alone (the class and address are read only when an API
    /// key or rate limit needs them; CORS preflights never need the key).
    /// Never blocks; counts the request against the rate limit.
    func decide(
        method: String, accessClass: @autoclosure () -> AccessClass,
        remoteAddress: @autoclosure () -> String?, fields: some HeaderFields, chargesRateLimit: Bool = true
    ) -> AccessDecision {
        if let error = fields.withField(HeaderName.host, { field in hosts.refusal(field) }) {
            return .answer(refusal(error))
        }
        let headers: [(String, String)]
        switch originDecision(method: method, fields: fields) {
        case .answer(let response): return .answer(response)
        case .proceed(let corsHeaders): headers = corsHeaders
        }
        if !CrossSiteCheck.safeMethods.contains(method),
            fields.withField(HeaderName.secFetchSite, { $0?.text.lowercased() == "cross-site" }),
            fields.withField(HeaderName.origin, { $0 == nil })
        {
            return .answer(refusal(.crossSiteRequest(fromOrigin: nil), headers: headers))
        }
        return keyAndRateLimitDecision(
            accessClass: accessClass, remoteAddress: remoteAddress, fields: fields, chargesRateLimit: chargesRateLimit,
            headers: headers)
    }

    /// What the `Origin` decides: with CORS on, a preflight's answer, a refused origin, or the allowed origin's CORS
    /// headers; with CORS off, a request from another site that no preflight asked for is refused unless it only
    /// reads.
    private func originDecision(method: String, fields: some HeaderFields) -> AccessDecision {
        let cors = configuration.cors
        if cors.isEnabled {
            switch fields.withField(HeaderName.origin, originCheck) {
            case .absent:
                return method == "OPTIONS" ? .answer(cors.preflightResponse()) : .proceed(headers: [])
            case .refused(let origin):
                refusedOrigins.record(origin, corsEnabled: true)
                return .answer(refusal(.originNotAllowed(origin)))
            case .allowed(let corsHeaders):
                guard method == "OPTIONS" else { return .proceed(headers: corsHeaders) }
                var preflight = cors.preflightResponse()
                preflight.headers += corsHeaders
                return .answer(preflight)
            }
        }
        if let origin = fields.withField(HeaderName.origin, { $0?.text }),
            !CrossSiteCheck.isOwnOrigin(origin, host: fields.withField(HeaderName.host, { $0?.text }))
        {
            refusedOrigins.record(origin, corsEnabled: false)
            // A request from another site that no preflight asked for (CORS off): a simple `POST` of a form or a
            // `text/plain` fetch, which a browser sends unasked. Refused before it runs.
            if !CrossSiteCheck.safeMethods.contains(method) {
                return .answer(refusal(.crossSiteRequest(fromOrigin: origin)))
            }
        }
        return .proceed(headers: [])
    }

    /// The API key (with wrong keys held back per address) and the rate limit, for the classes that ask for them;
    /// a refusal carries the CORS `headers`.
    private func keyAndRateLimitDecision(
        accessClass: () -> AccessClass, remoteAddress: () -> String?, fields: some HeaderFields,
        chargesRateLimit: Bool, headers: [(String, String)]
    ) -> AccessDecision {
        if configuration.apiKey != nil, accessClass().needsAPIKey {
            let address = ClientAddress.rateLimitKey(remoteAddress())
            if let retryAfter = wrongKeys.refusal(for: address) {
                return .answer(refusal(.rateLimited(retryAfter: retryAfter), headers: headers))
            }
            if let error = apiKeyRefusal(fields) {
                let missing = fields.withField(HeaderName.xAPIKey) { $0 == nil }
                metrics?.apiKeyRefused(missing: missing)
                if !missing { wrongKeys.record(address) }
                return .answer(refusal(error, headers: headers))
            }
        }
        if let rateLimiter, chargesRateLimit, accessClass().isRateLimited,
            let retryAfter = rateLimiter.admit(remoteAddress())
        {
            return .answer(refusal(.rateLimited(retryAfter: retryAfter), headers: headers))
        }
        return .proceed(headers: headers)
    }

    /// ``decide(method:accessClass:remoteAddress:fields:chargesRateLimit:)`` for a request whose head the server has
    /// read (and its body, unless ``GatewayRequest/bodyPending``); then, on a route that acts for the caller, the
    /// cross-site check. A request admitted from its head was counted by the rate limit then.
    func decide(_ request: GatewayRequest, accessClass: AccessClass) -> AccessDecision {
        let decision = decide(
            method: request.method, accessClass: accessClass, remoteAddress: request.remoteAddress, fields: request,
            chargesRateLimit: !request.admittedFromHead)
        guard case .proceed(let headers) = decision, let crossSite, accessClass.isRateLimited,
            let error = crossSite.refusal(of: request)
        else {
            return decision
        }
        return .answer(refusal(error, headers: headers))
    }

    /// Why the API key check refuses a request with these header fields (the key missing or wrong); `nil` when it
    /// passes, or when the gateway has no key.
    private func apiKeyRefusal(_ fields: some HeaderFields) -> GatewayError? {
        guard let key = configuration.apiKey else { return nil }
        switch fields.withField(HeaderName.xAPIKey, { $0.map { key.matches($0) } }) {
        case nil: return .invalidAPIKey(missing: true)
        case false?: return .invalidAPIKey(missing: false)
        case true?: return nil
        }
    }

    /// Charges a stream or batch `GET` of `count` subscriptions the rest of its rate-limit cost, one token per
    /// subscription: the access stage took one when the request came, this takes `count - 1` more from the same
    /// client's bucket once its subscriptions are counted. Nothing without a rate limit.
    /// - Throws: 429 `RateLimited` when the client's bucket does not hold them.
    func chargeSubscriptions(_ count: Int, remoteAddress: String?) throws(GatewayError) {
        guard let rateLimiter, count > 1 else { return }
        if let retryAfter = rateLimiter.admit(remoteAddress, cost: count - 1) {
            throw .rateLimited(retryAfter: retryAfter)
        }
    }

    /// The API key check alone, for what an open route serves only to callers with the key: the functions document.
    /// - Throws: 401 `InvalidAPIKey` when the gateway has a key and `request` does not carry it.
    func requireAPIKey(_ request: GatewayRequest) throws(GatewayError) {
        if let error = apiKeyRefusal(request) { throw error }
    }

    private enum OriginCheck {
        case absent
        case allowed([(String, String)])
        case refused(String)
    }

    /// The CORS answer for an `Origin` field's bytes (CORS on): the prepared headers of a configured origin sent
    /// as configured, else ``CORSPolicy/allows(origin:)`` and ``CORSPolicy/responseHeaders(origin:)`` on its text.
    private func originCheck(_ field: FieldValue?) -> OriginCheck {
        guard let field else { return .absent }
        if let corsHeadersForAnyOrigin { return .allowed(corsHeadersForAnyOrigin) }
        for entry in corsHeadersByOrigin where field.hasSameBytes(as: entry.origin) {
            return .allowed(entry.headers)
        }
        let origin = field.text
        let cors = configuration.cors
        return cors.allows(origin: origin) ? .allowed(cors.responseHeaders(origin: origin)) : .refused(origin)
    }

    /// Wraps an upstream so refused functions look unknown; returns it unchanged when every function is allowed.
    package func filter(_ upstream: any ConvexUpstream) -> any ConvexUpstream {
        configuration.functions.isOpen ? upstream : FilteredUpstream(base: upstream, filter: configuration.functions)
    }

    private func refusal(_ error: GatewayError, headers: [(String, String)] = []) -> GatewayResponse {
        // Refusals are rendered without a value, so the output mode does not matter.
        var response = GatewayResponse.error(error) { $0.convexJSON() }
        response.headers += headers
        return response
    }
}
