/// A complete response: status, header fields and body bytes.
///
/// libmicrohttpd adds `Date`, `Content-Length` and, when it will close the connection,
/// `Connection: close`; do not set `Content-Length` or `Transfer-Encoding` yourself.
/// For `HEAD` requests libmicrohttpd sends the headers only.
public struct HTTPResponse: Sendable {
    /// The status code (100...999).
    public var status: Int
    /// The header fields, sent in order.
    public var headers: HTTPHeaders
    /// The body bytes (copied by libmicrohttpd when queued).
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Creates a response whose body is the UTF-8 of `body`.
    public init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: String) {
        self.init(status: status, headers: headers, body: Array(body.utf8))
    }
}
