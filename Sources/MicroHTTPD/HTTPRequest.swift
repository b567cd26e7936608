/// One query parameter as libmicrohttpd parsed it: `%HH` and `+` decoded, order and repeats kept.
///
/// `?flag` gives `value == nil`; `?e=` gives `value == ""`; `?=x` gives `name == ""`.
public struct HTTPQueryItem: Sendable, Hashable {
    /// The decoded parameter name.
    public var name: String
    /// The decoded value, or `nil` when the parameter had no `=`.
    public var value: String?

    /// Creates a query item.
    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}

/// A complete HTTP request (headers and body) handed to an ``HTTPHandler``.
public struct HTTPRequest: Sendable {
    /// The method as sent, e.g. `GET`.
    public var method: String
    /// The path without the query, percent-decoded by libmicrohttpd: `%2F` has already become `/`
    /// (indistinguishable from a real `/`), `+` is kept, invalid escapes like `%zz` are kept, and a
    /// `%00` ends the path (libmicrohttpd hands it over as a C string). Route on ``rawPath`` when
    /// encoded slashes matter.
    public var path: String
    /// The request-target exactly as the client sent it (path and query, not decoded),
    /// e.g. `/query/dir%2Ffile:fn?x=1`; `nil` only if libmicrohttpd did not report it.
    public var target: String?
    /// The protocol version, e.g. `HTTP/1.1`.
    public var version: String
    /// The query parameters in order, repeats kept (names compared case-sensitively by ``queryItems(named:)``).
    public var queryItems: [HTTPQueryItem]
    /// The request headers in arrival order.
    public var headers: HTTPHeaders
    /// The complete request body (empty when there was none).
    public var body: [UInt8]
    /// The client's numeric IP address, e.g. `127.0.0.1` or `::1`.
    public var remoteAddress: String?
    /// The client's TCP port.
    public var remotePort: UInt16?

    /// Creates a request (the server builds these; public for tests of handlers).
    public init(
        method: String,
        path: String,
        target: String? = nil,
        version: String = "HTTP/1.1",
        queryItems: [HTTPQueryItem] = [],
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        remoteAddress: String? = nil,
        remotePort: UInt16? = nil
    ) {
        self.method = method
        self.path = path
        self.target = target
        self.version = version
        self.queryItems = queryItems
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
    }

    /// The raw (not percent-decoded) path part of ``target``: everything before the first `?`.
    public var rawPath: Substring? {
        guard let target else { return nil }
        if let question = target.firstIndex(of: "?") {
            return target[..<question]
        }
        return target[...]
    }

    /// The raw (not decoded) query part of ``target`` after the first `?`, or `nil` if there is no `?`.
    public var rawQuery: Substring? {
        guard let target, let question = target.firstIndex(of: "?") else { return nil }
        return target[target.index(after: question)...]
    }

    /// The query items whose name equals `name` exactly (case-sensitive), in order.
    public func queryItems(named name: String) -> [HTTPQueryItem] {
        queryItems.filter { $0.name == name }
    }
}
