import ConvexSyncProtocol
import ConvexValues
import HTTPFields

/// An error the gateway answers with: an HTTP status and the one JSON error body used everywhere,
/// `{"error": {"code": "...", "message": "...", "data": ...}}` (`data` only for a function's `ConvexError`).
///
/// This is the only place where failures become status codes: ``Code/status``.
package struct GatewayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code, and the HTTP status it is answered with: the one table of the
    /// gateway's errors (docs/routes-and-errors.md).
    package enum Code: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        case badRequest = "BadRequest"
        case malformedJSON = "MalformedJSON"
        case invalidArguments = "InvalidArguments"
        case invalidFunctionPath = "InvalidFunctionPath"
        case invalidFormat = "InvalidFormat"
        /// A `delta` query parameter other than `json-patch`.
        case invalidDelta = "InvalidDelta"
        /// A multi-subscription stream URL names no subscription, too many, or one badly.
        case invalidSubscriptions = "InvalidSubscriptions"
        /// A batch query URL (`GET /query?q.<id>=…`) names no query, too many, or one badly.
        case invalidQueries = "InvalidQueries"
        /// A `POST /mutations` body that is not a list of 1 to 100 mutations with increasing request ids.
        case invalidMutations = "InvalidMutations"
        /// A `POST /mutations` without a `Convex-Session-Id` that is a lowercase UUID.
        case invalidSession = "InvalidSession"
        case invalidTimestamp = "InvalidTimestamp"
        case argumentValidation = "ArgumentValidationError"
        case unauthenticated = "Unauthenticated"
        /// The gateway has an API key and the request's `X-API-Key` is missing or wrong.
        case invalidAPIKey = "InvalidAPIKey"
        /// CORS is on and the request's `Origin` is not allowed.
        case originNotAllowed = "OriginNotAllowed"
        /// The auth cookie authenticates a request that changes state from another site, or without a JSON body
        /// (Access/CrossSiteCheck.swift).
        case crossSiteRequest = "CrossSiteRequest"
        /// The request's `Host` names no address the gateway answers for (DNS rebinding: Access/HostCheck.swift).
        case hostNotAllowed = "HostNotAllowed"
        /// The request has no `Host` field.
        case missingHost = "MissingHost"
        /// The client sent its request line and headers, or its body, too slowly.
        case requestTimeout = "RequestTimeout"
        case functionNotFound = "FunctionNotFound"
        case routeNotFound = "NotFound"
        case methodNotAllowed = "MethodNotAllowed"
        case notAcceptable = "NotAcceptable"
        case payloadTooLarge = "PayloadTooLarge"
        /// The request line and header fields do not fit the connection's memory pool (`--connection-memory-bytes`).
        case headerFieldsTooLarge = "HeaderFieldsTooLarge"
        /// The request asks for something the server does not do (a transfer coding other than chunked).
        case notImplemented = "NotImplemented"
        case unsupportedMediaType = "UnsupportedMediaType"
        case convexError = "ConvexError"
        /// The client's rate limit is used up.
        case rateLimited = "RateLimited"
        /// The caller made as many of the live upstream subscriptions as one caller may
        /// (`--max-subscriptions-per-caller`).
        case tooManySubscriptions = "TooManySubscriptions"
        /// The client holds as many event streams as one client may (`--max-streams-per-client`).
        case tooManyStreams = "TooManyStreams"
        /// The client holds as many waiting long-polls as one client may (`--max-long-polls-per-client`).
        case tooManyLongPolls = "TooManyLongPolls"
        /// The client has as many calls running as one client may (`--max-calls-per-client`).
        case tooManyCalls = "TooManyCalls"
        /// The client address holds as many connections as one address may (`--max-connections-per-client`).
        case tooManyConnections = "TooManyConnections"
        /// The client address holds as many request-body bytes as one address may (`--max-body-bytes-per-client`).
        case tooManyBodyBytes = "TooManyBodyBytes"
        /// The client address holds as many signed-in upstream connections as one address may
        /// (`--max-identities-per-client`).
        case tooManyIdentities = "TooManyIdentities"
        case functionFailed = "FunctionFailed"
        case internalError = "InternalError"
        case upstreamConnectionLost = "UpstreamConnectionLost"
        case upstreamUnavailable = "UpstreamUnavailable"
        case overloaded = "Overloaded"
        case shuttingDown = "ShuttingDown"
        /// The gateway stopped (its shutdown grace period ended) before a mutation's or action's answer came: it may
        /// or may not have run.
        case outcomeUnknown = "OutcomeUnknown"
        case upstreamTimeout = "UpstreamTimeout"

        /// The HTTP status of an error with this code.
        package var status: Int {
            switch self {
            case .badRequest, .malformedJSON, .invalidArguments, .invalidFunctionPath, .invalidFormat, .invalidDelta,
                .invalidSubscriptions, .invalidQueries, .invalidMutations, .invalidSession, .invalidTimestamp,
                .argumentValidation, .missingHost:
                400
            case .unauthenticated, .invalidAPIKey: 401
            case .originNotAllowed, .crossSiteRequest, .hostNotAllowed: 403
            case .functionNotFound, .routeNotFound: 404
            case .methodNotAllowed: 405
            case .notAcceptable: 406
            case .requestTimeout: 408
            case .payloadTooLarge: 413
            case .headerFieldsTooLarge: 431
            case .unsupportedMediaType: 415
            case .convexError: 422
            case .rateLimited, .tooManySubscriptions, .tooManyStreams, .tooManyLongPolls, .tooManyCalls,
                .tooManyIdentities, .tooManyConnections, .tooManyBodyBytes:
                429
            case .functionFailed, .internalError: 500
            case .notImplemented: 501
            case .upstreamConnectionLost, .outcomeUnknown: 502
            case .upstreamUnavailable, .overloaded, .shuttingDown: 503
            case .upstreamTimeout: 504
            }
        }

        package var description: String { rawValue }
    }

    package var code: Code
    package var message: String
    /// The `ConvexError` data a function threw, if any.
    package var data: ConvexValue?
    /// Extra response headers (`Allow`, `Retry-After`).
    package var headers: [(String, String)]
    /// The subscription of a stream (`sub`) or the query of a batch (`query`) the error concerns, a field of the
    /// body so that a client need not read it from the message.
    package var concerns: (field: String, id: String)?

    /// The HTTP status, from the code.
    package var status: Int { code.status }

    package init(code: Code, message: String, data: ConvexValue? = nil, headers: [(String, String)] = []) {
        self.code = code
        self.message = message
        self.data = data
        self.headers = headers
    }

    package var description: String { "\(status) \(code): \(message)" }

    package static func == (lhs: GatewayError, rhs: GatewayError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.data == rhs.data
            && lhs.concerns?.field == rhs.concerns?.field && lhs.concerns?.id == rhs.concerns?.id
            && lhs.headers.map { "\($0.0): \($0.1)" } == rhs.headers.map { "\($0.0): \($0.1)" }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}

extension GatewayError {
    package static func badRequest(_ message: String, code: Code = .badRequest) -> GatewayError {
        GatewayError(code: code, message: message)
    }

    package static func malformedJSON(_ error: ConvexValueError, in what: String) -> GatewayError {
        GatewayError(
            code: .malformedJSON, message: "\(what) is not valid JSON: \(error.message) (at \(error.path))"
        )
    }

    package static func invalidTimestamp(_ message: String) -> GatewayError {
        GatewayError(code: .invalidTimestamp, message: message)
    }

    package static func unauthenticated(_ message: String) -> GatewayError {
        GatewayError(code: .unauthenticated, message: message, headers: [(HeaderName.wwwAuthenticate, "Bearer")])
    }

    package static func routeNotFound(_ path: String) -> GatewayError {
        GatewayError(code: .routeNotFound, message: "No route for \(path)")
    }

    package static func functionNotFound(_ function: String) -> GatewayError {
        GatewayError(code: .functionNotFound, message: "Could not find public function for '\(function)'")
    }

    package static func methodNotAllowed(_ method: String, allowed: [String]) -> GatewayError {
        GatewayError(
            code: .methodNotAllowed,
            message: "Method \(method) is not allowed here; use \(allowed.joined(separator: " or "))",
            headers: [(HeaderName.allow, allowed.joined(separator: ", "))]
        )
    }

    package static func unsupportedMediaType(_ contentType: String) -> GatewayError {
        GatewayError(
            code: .unsupportedMediaType,
            message: "Content-Type \(contentType) is not supported; send application/json"
        )
    }

    package static func payloadTooLarge(limit: Int) -> GatewayError {
        GatewayError(
            code: .payloadTooLarge, message: "Request body is larger than the limit of \(limit) bytes")
    }

    /// The deployment cannot be reached. Why (an address, a port, an errno) is the log's, never the caller's: see
    /// ``UpstreamFailure/gatewayError(logging:)``.
    package static func upstreamUnavailable(retryAfter: Int = 1) -> GatewayError {
        GatewayError(
            code: .upstreamUnavailable, message: "Convex deployment is unreachable; try again later",
            headers: [(HeaderName.retryAfter, String(retryAfter))]
        )
    }

    /// The deployment is known unreachable: the gateway's last attempt to connect failed, and it tries again in the
    /// background; the request is refused at once rather than after a connect attempt of its own.
    package static var deploymentUnreachable: GatewayError {
        GatewayError(
            code: .upstreamUnavailable,
            message: "Convex deployment is unreachable (the gateway's last attempt to connect failed and it keeps "
                + "trying); try again later",
            headers: [(HeaderName.retryAfter, "1")])
    }

    package static func upstreamTimeout(seconds: Double) -> GatewayError {
        GatewayError(
            code: .upstreamTimeout,
            message: "Convex deployment did not answer within \(formatSeconds(seconds))"
        )
    }

    package static func timestampNotReached(_ ts: ConvexTimestamp, seconds: Double) -> GatewayError {
        GatewayError(
            code: .upstreamTimeout,
            message: "Convex deployment did not reach timestamp \(ts.nanoseconds) within \(formatSeconds(seconds))")
    }

    package static let overloaded = GatewayError(
        code: .overloaded, message: "Connection limit reached; try again later",
        headers: [(HeaderName.retryAfter, "1")]
    )

    /// A request body that does not fit beside the bodies held now (`--max-body-bytes-in-flight`); answered before
    /// the body is read when its `Content-Length` says so.
    package static let bodiesInFlightLimitReached = GatewayError(
        code: .overloaded, message: "Too many request bodies are in flight; try again shortly",
        headers: [(HeaderName.retryAfter, "1")]
    )

    /// A signed-in caller without an upstream connection while `--max-identities` signed-in callers hold one: each
    /// is a connection to the deployment, kept for `--identity-idle-seconds` after its last use (`retryAfter`).
    package static func identityLimitReached(retryAfter: Int) -> GatewayError {
        GatewayError(
            code: .overloaded,
            message: "Too many signed-in callers hold connections to the deployment; try again later",
            headers: [(HeaderName.retryAfter, String(retryAfter))])
    }

    /// A new signed-in identity from a client address that opened `--max-identities-per-client` connections already.
    package static func identityShareReached(limit: Int, retryAfter: Int) -> GatewayError {
        GatewayError(
            code: .tooManyIdentities,
            message:
                "This client address holds connections to the deployment for \(limit) signed-in callers, as many as "
                + "one address may (--max-identities-per-client); try again once one has been idle",
            headers: [(HeaderName.retryAfter, String(retryAfter))])
    }

    /// A call while its client has `--max-calls-per-client` running.
    package static func tooManyCalls(limit: Int) -> GatewayError {
        GatewayError(
            code: .tooManyCalls,
            message:
                "This client already has \(limit) mutations and actions running, as many as one client may "
                + "(--max-calls-per-client); wait for their answers",
            headers: [(HeaderName.retryAfter, "1")])
    }

    /// A long-poll while its client holds `--max-streams-per-client` waiting.
    package static func tooManyLongPolls(limit: Int) -> GatewayError {
        GatewayError(
            code: .tooManyLongPolls,
            message:
                "This client already holds \(limit) waiting long-polls, as many as one client may "
                + "(--max-streams-per-client); wait for their answers, or follow the queries on one stream",
            headers: [(HeaderName.retryAfter, "1")])
    }

    /// A new event stream while `--max-streams` are open: the connections left are kept for calls and `GET`s.
    package static let streamLimitReached = GatewayError(
        code: .overloaded, message: "Stream limit reached; try again later",
        headers: [(HeaderName.retryAfter, "5")]
    )

    /// A stream or batch `GET` that needs a new upstream subscription while `--max-subscriptions` live (a `GET` of
    /// one query makes a one-shot call instead). Subscriptions free up as their readers leave and keep-warm ends.
    package static let subscriptionLimitReached = GatewayError(
        code: .overloaded, message: "Subscription limit reached; try again later",
        headers: [(HeaderName.retryAfter, "5")]
    )

    /// A stream or batch `GET` that needs a new upstream subscription while its caller (identity, else client
    /// address) has made `limit` of the live ones: a 429, since the gateway still serves others. The caller's
    /// subscriptions free up as its streams close and, unread, at the end of their keep-warm period.
    package static func callerSubscriptionLimitReached(limit: Int, keepWarm: Duration) -> GatewayError {
        GatewayError(
            code: .tooManySubscriptions,
            message: "This caller already holds \(limit) live subscriptions, the most one caller may "
                + "(--max-subscriptions-per-caller); close a stream, or retry once unread ones expire",
            headers: [(HeaderName.retryAfter, String(max(1, Int(keepWarm.seconds.rounded(.up)))))])
    }

    package static let shuttingDown = GatewayError(
        code: .shuttingDown, message: "Gateway is shutting down",
        headers: [(HeaderName.retryAfter, "1")]
    )

    package static let unansweredAtShutdown = GatewayError(
        code: .outcomeUnknown,
        message: "The gateway stopped before the deployment answered; the mutation or action may or may not have "
            + "run. Read before retrying one that is not idempotent")

    /// Unexpected failures: the client sees a bare message, the detail goes to the log.
    package static let internalError = GatewayError(
        code: .internalError, message: "Internal gateway error")
}

func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}

extension GatewayError {
    /// The JSON error body `{"error":<object>}`, with `data` rendered in the request's output mode.
    package func body(render: (ConvexValue) -> [UInt8]) -> [UInt8] {
        Array(#"{"error":"#.utf8) + object(render: render) + [UInt8(ascii: "}")]
    }

    /// The error object alone, `{"code":…,"message":…,"data":…}`: what a batch GET lists under `errors`.
    package func object(render: (ConvexValue) -> [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.append(contentsOf: #"{"code":"#.utf8)
        out.append(contentsOf: ConvexValue.string(code.rawValue).convexJSON())
        out.append(contentsOf: #","message":"#.utf8)
        out.append(contentsOf: ConvexValue.string(message).convexJSON())
        if let data {
            out.append(contentsOf: #","data":"#.utf8)
            out.append(contentsOf: render(data))
        }
        if let concerns {
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: ConvexValue.string(concerns.field).convexJSON())
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: ConvexValue.string(concerns.id).convexJSON())
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
