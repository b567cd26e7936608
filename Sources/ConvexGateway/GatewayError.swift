import ConvexValues

/// An error the gateway answers with: an HTTP status and the one JSON error body used everywhere,
/// `{"error": {"code": "...", "message": "...", "data": ...}}` (`data` only for a function's `ConvexError`).
///
/// This is the only place where failures become status codes.
package struct GatewayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        package static let badRequest = Code(rawValue: "BadRequest")
        package static let malformedJSON = Code(rawValue: "MalformedJSON")
        package static let invalidArguments = Code(rawValue: "InvalidArguments")
        package static let invalidFunctionPath = Code(rawValue: "InvalidFunctionPath")
        package static let invalidFormat = Code(rawValue: "InvalidFormat")
        package static let invalidTimestamp = Code(rawValue: "InvalidTimestamp")
        package static let argumentValidation = Code(rawValue: "ArgumentValidationError")
        package static let functionNotFound = Code(rawValue: "FunctionNotFound")
        package static let routeNotFound = Code(rawValue: "NotFound")
        package static let convexError = Code(rawValue: "ConvexError")
        package static let functionFailed = Code(rawValue: "FunctionFailed")
        package static let unauthenticated = Code(rawValue: "Unauthenticated")
        package static let methodNotAllowed = Code(rawValue: "MethodNotAllowed")
        package static let unsupportedMediaType = Code(rawValue: "UnsupportedMediaType")
        package static let notAcceptable = Code(rawValue: "NotAcceptable")
        package static let payloadTooLarge = Code(rawValue: "PayloadTooLarge")
        package static let upstreamUnavailable = Code(rawValue: "UpstreamUnavailable")
        package static let upstreamTimeout = Code(rawValue: "UpstreamTimeout")
        package static let upstreamConnectionLost = Code(rawValue: "UpstreamConnectionLost")
        package static let overloaded = Code(rawValue: "Overloaded")
        package static let shuttingDown = Code(rawValue: "ShuttingDown")
        package static let internalError = Code(rawValue: "InternalError")
    }

    package var status: Int
    package var code: Code
    package var message: String
    /// The `ConvexError` data a function threw, if any.
    package var data: ConvexValue?
    /// Extra response headers (`Allow`, `Retry-After`).
    package var headers: [(String, String)]

    package init(status: Int, code: Code, message: String, data: ConvexValue? = nil, headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.data = data
        self.headers = headers
    }

    package var description: String { "\(status) \(code): \(message)" }

    package static func == (lhs: GatewayError, rhs: GatewayError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message && lhs.data == rhs.data
            && lhs.headers.map { "\($0.0): \($0.1)" } == rhs.headers.map { "\($0.0): \($0.1)" }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        hasher.combine(code)
        hasher.combine(message)
    }
}

extension GatewayError {
    package static func badRequest(_ message: String, code: Code = .badRequest) -> GatewayError {
        GatewayError(status: 400, code: code, message: message)
    }

    package static func malformedJSON(_ error: ConvexValueError, in what: String) -> GatewayError {
        GatewayError(
            status: 400, code: .malformedJSON, message: "\(what) is not valid JSON: \(error.message) (at \(error.path))"
        )
    }

    package static func invalidTimestamp(_ message: String) -> GatewayError {
        GatewayError(status: 400, code: .invalidTimestamp, message: message)
    }

    package static func unauthenticated(_ message: String) -> GatewayError {
        GatewayError(status: 401, code: .unauthenticated, message: message, headers: [("WWW-Authenticate", "Bearer")])
    }

    package static func routeNotFound(_ path: String) -> GatewayError {
        GatewayError(status: 404, code: .routeNotFound, message: "No route for \(path)")
    }

    package static func functionNotFound(_ function: String) -> GatewayError {
        GatewayError(status: 404, code: .functionNotFound, message: "Could not find public function for '\(function)'")
    }

    package static func methodNotAllowed(_ method: String, allowed: [String]) -> GatewayError {
        GatewayError(
            status: 405, code: .methodNotAllowed,
            message: "Method \(method) is not allowed here; use \(allowed.joined(separator: " or "))",
            headers: [("Allow", allowed.joined(separator: ", "))]
        )
    }

    package static func unsupportedMediaType(_ contentType: String) -> GatewayError {
        GatewayError(
            status: 415, code: .unsupportedMediaType,
            message: "Content-Type \(contentType) is not supported; send application/json"
        )
    }

    package static func payloadTooLarge(limit: Int) -> GatewayError {
        GatewayError(
            status: 413, code: .payloadTooLarge, message: "Request body is larger than the limit of \(limit) bytes")
    }

    package static func upstreamUnavailable(_ detail: String, retryAfter: Int = 1) -> GatewayError {
        GatewayError(
            status: 503, code: .upstreamUnavailable, message: "Convex deployment is unreachable: \(detail)",
            headers: [("Retry-After", String(retryAfter))]
        )
    }

    package static func upstreamTimeout(seconds: Double) -> GatewayError {
        GatewayError(
            status: 504, code: .upstreamTimeout,
            message: "Convex deployment did not answer within \(formatSeconds(seconds))"
        )
    }

    package static func timestampNotReached(_ ts: UInt64, seconds: Double) -> GatewayError {
        GatewayError(
            status: 504, code: .upstreamTimeout,
            message: "Convex deployment did not reach timestamp \(ts) within \(formatSeconds(seconds))")
    }

    package static let overloaded = GatewayError(
        status: 503, code: .overloaded, message: "Connection limit reached; try again later",
        headers: [("Retry-After", "1")]
    )

    /// A new event stream while `--max-streams` are open: the connections left are kept for calls and `GET`s.
    package static let streamLimitReached = GatewayError(
        status: 503, code: .overloaded, message: "Stream limit reached; try again later",
        headers: [("Retry-After", "5")]
    )

    package static let shuttingDown = GatewayError(
        status: 503, code: .shuttingDown, message: "Gateway is shutting down",
        headers: [("Retry-After", "1")]
    )

    /// Unexpected failures: the client sees a bare message, the detail goes to the log.
    package static let internalError = GatewayError(
        status: 500, code: .internalError, message: "Internal gateway error")
}

func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}

extension GatewayError {
    /// The JSON error body, with `data` rendered in the request's output mode.
    package func body(render: (ConvexValue) -> [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.append(contentsOf: #"{"error":{"code":"#.utf8)
        out.append(contentsOf: ConvexValue.string(code.rawValue).convexJSON())
        out.append(contentsOf: #","message":"#.utf8)
        out.append(contentsOf: ConvexValue.string(message).convexJSON())
        if let data {
            out.append(contentsOf: #","data":"#.utf8)
            out.append(contentsOf: render(data))
        }
        out.append(contentsOf: "}}".utf8)
        return out
    }
}
