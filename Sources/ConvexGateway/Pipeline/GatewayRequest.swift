/// A request as the server hands it to the gateway, before any parsing: the method, the target exactly as sent,
/// the headers and the body. ``ParsedRequest`` is what the pipeline makes of it.
public struct GatewayRequest: Sendable {
    public var method: String
    /// The request target's path, not yet percent-decoded.
    public var rawPath: String
    /// The query string as sent (after `?`, still percent-encoded), `nil` without a `?`.
    public var rawQuery: String?
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: [UInt8]
    public var startedAt: ContinuousClock.Instant
    /// The client's numeric IP address, for the per-client rate limit.
    public var remoteAddress: String?

    public init(
        method: String, rawPath: String, rawQuery: String? = nil, headers: [String: String], body: [UInt8] = [],
        remoteAddress: String? = nil, startedAt: ContinuousClock.Instant = .now
    ) {
        self.method = method
        self.rawPath = rawPath
        self.rawQuery = rawQuery
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.body = body
        self.remoteAddress = remoteAddress
        self.startedAt = startedAt
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The request target as sent (path and query), which the hot `GET` path remembers answers by.
    public var target: String { rawQuery.map { "\(rawPath)?\($0)" } ?? rawPath }
}
