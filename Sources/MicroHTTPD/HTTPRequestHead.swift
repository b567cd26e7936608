import CMicroHTTPD

/// A request as libmicrohttpd parsed it, before the server builds an ``HTTPRequest``: what an
/// ``HTTPServerConfiguration/quickResponder`` sees. Headers are read in place from libmicrohttpd's
/// buffers, so it is valid only during that call, on that thread (hence not `Sendable`).
public struct HTTPRequestHead {
    let connection: ConnectionHandle

    /// The method as sent, e.g. `GET`.
    public let method: String

    /// The request-target exactly as the client sent it (path and query, not decoded); `nil` only
    /// if libmicrohttpd did not report it.
    public let target: String?

    /// The value of the first header field named `name` (ASCII case-insensitive), or `nil`.
    public func header(_ name: String) -> String? {
        MHD_lookup_connection_value(connection.raw, MHD_ValueKind.HEADER_KIND, name).map { String(cString: $0) }
    }

    /// The client's numeric IP address, as ``HTTPRequest/remoteAddress`` gives it.
    public var remoteAddress: String? { connection.remote?.host }

    /// Whether a header field named `name` (ASCII case-insensitive) was sent.
    public func hasHeader(_ name: String) -> Bool {
        MHD_lookup_connection_value(connection.raw, MHD_ValueKind.HEADER_KIND, name) != nil
    }
}

@available(*, unavailable, message: "valid only during the quick responder's call")
extension HTTPRequestHead: Sendable {}
