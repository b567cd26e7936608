/// A request as the gateway's routing sees it, independent of the HTTP server underneath.
public struct GatewayRequest: Sendable {
    public var method: String
    /// The request target's path, not yet percent-decoded.
    public var rawPath: String
    public var query: [(name: String, value: String?)]
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: [UInt8]
    public var startedAt: ContinuousClock.Instant
    /// The client's numeric IP address, for the per-client rate limit.
    public var remoteAddress: String? = nil
    /// The query string as sent (after `?`, still percent-encoded), to check that it decodes to UTF-8.
    public var rawQuery: String? = nil

    public init(
        method: String, rawPath: String, query: [(name: String, value: String?)], headers: [String: String],
        body: [UInt8], startedAt: ContinuousClock.Instant = .now
    ) {
        self.method = method
        self.rawPath = rawPath
        self.query = query
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.body = body
        self.startedAt = startedAt
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The request target as sent (path and query), which the hot `GET` path remembers answers by.
    public var target: String { rawQuery.map { "\(rawPath)?\($0)" } ?? rawPath }
}

/// A complete response.
public struct GatewayResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    static func json(_ body: [UInt8], status: Int = 200) -> GatewayResponse {
        GatewayResponse(status: status, headers: [("Content-Type", "application/json")], body: body)
    }
}

/// What the gateway does with a request: answer now (on the server's own thread), answer later, or open a stream.
public enum GatewayHandling: Sendable {
    case respond(GatewayResponse)
    case deferred(@Sendable () async -> GatewayOutcome)
}

/// How a deferred request ends: a response, or an event stream whose sink the server provides.
public enum GatewayOutcome: Sendable {
    case response(GatewayResponse)
    case stream(EventStreamStart)
}

/// Starting an SSE stream: the server sends the headers and `preamble`, wraps its stream writer in an `EventSink`
/// and calls `attach`; when the client goes away it calls `detach` with the same sink.
public struct EventStreamStart: Sendable {
    public var headers: [(String, String)]
    public var preamble: [UInt8]
    public var format: OutputFormat
    public var attach: @Sendable (any EventSink) -> Void
    public var detach: @Sendable (any EventSink) -> Void
}
