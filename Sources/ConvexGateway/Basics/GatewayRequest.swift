import HTTPFields

/// A request as the server hands it to the gateway, before any parsing: the method, the target exactly as sent,
/// the headers and the body. ``ParsedRequest`` is what the pipeline makes of it.
package struct GatewayRequest: Sendable {
    package var method: String
    /// The request target's path, not yet percent-decoded.
    package var rawPath: String
    /// The query string as sent (after `?`, still percent-encoded), `nil` without a `?`.
    package var rawQuery: String?
    /// Header names lower-cased.
    package var headers: [String: String]
    package var body: [UInt8]
    /// The client's numeric IP address, for the per-client rate limit.
    package var remoteAddress: String?
    /// The server admitted the request from its head, before its body was read (``GatewayCore/admit(_:)``): the
    /// rate limit has counted it then.
    package var admittedFromHead = false
    /// The request is judged from its head: its body, which it sends, is not read yet.
    package var bodyPending = false

    /// Whether the request sends a body.
    package var sendsBody: Bool { bodyPending || !body.isEmpty }

    package init(
        method: String, rawPath: String, rawQuery: String? = nil, headers: [String: String], body: [UInt8] = [],
        remoteAddress: String? = nil
    ) {
        self.method = method
        self.rawPath = rawPath
        self.rawQuery = rawQuery
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.body = body
        self.remoteAddress = remoteAddress
    }

    package func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The request target as sent (path and query), which the hot path remembers answers by.
    package var target: String { rawQuery.map { "\(rawPath)?\($0)" } ?? rawPath }
}

extension GatewayRequest: HeaderFields {
    package func withField<R>(_ name: String, _ body: (FieldValue?) -> R) -> R {
        guard let value = header(name) else { return body(nil) }
        return FieldValue.of(value, body)
    }
}
