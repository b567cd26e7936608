import CMicroHTTPD

/// One query parameter, read by libmicrohttpd's rules: `%HH` and `+` decoded, order and repeats kept.
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

    /// The parameters of a raw query (the part of the request-target after `?`), as libmicrohttpd 0.9.75's
    /// `MHD_parse_arguments_` reads them: split at `&`, each at its first `=` (none: no value), `+` is a space, a
    /// valid `%HH` its byte (an invalid one stays as it is); an empty last parameter (`a=1&`) is no parameter.
    ///
    /// The server reads them here, not from libmicrohttpd: libmicrohttpd 0.9.75 stores each parameter in the
    /// connection's memory pool, and when a long request line leaves no room for one it queues its error answer and
    /// then goes on waiting for header lines it has already discarded, so the client gets nothing until the idle
    /// timeout (Callbacks.swift, `uriLogThunk`).
    public static func items(inRawQuery query: Substring) -> [HTTPQueryItem] {
        var items: [HTTPQueryItem] = []
        var rest = query.utf8[...]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: UInt8(ascii: "&")) ?? rest.endIndex
            let parameter = rest[..<end]
            if let equals = parameter.firstIndex(of: UInt8(ascii: "=")) {
                items.append(
                    HTTPQueryItem(
                        name: decoded(parameter[..<equals]),
                        value: decoded(parameter[parameter.index(after: equals)...])))
            } else {
                items.append(HTTPQueryItem(name: decoded(parameter), value: nil))
            }
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
        }
        return items
    }

    /// `+` as a space, then libmicrohttpd's own unescaping (`MHD_http_unescape`: a valid `%HH` becomes its byte, an
    /// invalid one stays); the bytes read as UTF-8 (invalid ones replaced).
    private static func decoded(_ text: Substring.UTF8View.SubSequence) -> String {
        var bytes = text.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }
        bytes.append(0)
        let count = bytes.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { MHD_http_unescape($0.baseAddress) }
        }
        return String(decoding: bytes[..<count], as: UTF8.self)
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
    /// The request headers in arrival order.
    public var headers: HTTPHeaders
    /// The complete request body (empty when there was none).
    public var body: [UInt8]
    /// The client's numeric IP address, e.g. `127.0.0.1` or `::1`.
    public var remoteAddress: String?
    /// The client's TCP port.
    public var remotePort: UInt16?
    /// Whether ``HTTPServerConfiguration/admission`` admitted the request from its head, before its body was read.
    public var admittedFromHead = false

    /// Creates a request (the server builds these; public for tests of handlers).
    public init(
        method: String,
        path: String,
        target: String? = nil,
        version: String = "HTTP/1.1",
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        remoteAddress: String? = nil,
        remotePort: UInt16? = nil,
        admittedFromHead: Bool = false
    ) {
        self.method = method
        self.path = path
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.admittedFromHead = admittedFromHead
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

    /// The query parameters of ``target`` in order, repeats kept (names compared case-sensitively by
    /// ``queryItems(named:)``).
    public var queryItems: [HTTPQueryItem] {
        rawQuery.map(HTTPQueryItem.items(inRawQuery:)) ?? []
    }

    /// The query items whose name equals `name` exactly (case-sensitive), in order.
    public func queryItems(named name: String) -> [HTTPQueryItem] {
        queryItems.filter { $0.name == name }
    }
}
