import CMicroHTTPD

/// A request as libmicrohttpd parsed it, before the server builds an ``HTTPRequest``: what an
/// ``HTTPServerConfiguration/hotPath`` sees. Headers are read in place from libmicrohttpd's
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
        withHeader(name) { bytes in bytes.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// Calls `body` with the bytes of the first header field named `name` (ASCII case-insensitive), read in place
    /// from libmicrohttpd's buffer (valid only during the call), or with `nil` when no such field was sent. No
    /// `String` is made, so a header that is only compared or scanned costs no allocation.
    public func withHeader<R, E: Error>(
        _ name: String, _ body: (UnsafeBufferPointer<UInt8>?) throws(E) -> R
    ) throws(E) -> R {
        var value: UnsafePointer<CChar>?
        var size = 0
        var name = name
        let found = name.withUTF8 { key in
            key.withMemoryRebound(to: CChar.self) { key in
                MHD_lookup_connection_value_n(
                    connection.raw, MHD_ValueKind.HEADER_KIND, key.baseAddress, key.count, &value, &size)
            }
        }
        guard found == MHD_Result.YES, let value else { return try body(nil) }
        // `CChar` and `UInt8` may alias: the same bytes, read unsigned.
        return try body(
            UnsafeBufferPointer(start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), count: size))
    }

    /// An object the hot path keeps with the TCP connection from one of its requests to the next (e.g. what a
    /// request-target it saw last resolved to), `nil` on a new connection. Read and set on the connection's thread only,
    /// which a hot path always runs on; released with the connection.
    public var connectionMemo: AnyObject? {
        get { connection.context?.hotPathMemo }
        nonmutating set { connection.context?.hotPathMemo = newValue }
    }

    /// The client's numeric IP address, as ``HTTPRequest/remoteAddress`` gives it.
    public var remoteAddress: String? { connection.remote?.host }

    /// Every header field, in arrival order (copied out of libmicrohttpd's buffers).
    public var headers: HTTPHeaders {
        var fields: [HTTPHeaders.Field] = []
        withUnsafeMutablePointer(to: &fields) { pointer in
            _ = MHD_get_connection_values_n(connection.raw, MHD_ValueKind.HEADER_KIND, headerIteratorThunk, pointer)
        }
        return HTTPHeaders(fields: fields)
    }

    /// Whether a header field named `name` (ASCII case-insensitive) was sent.
    public func hasHeader(_ name: String) -> Bool {
        withHeader(name) { $0 != nil }
    }
}

@available(*, unavailable, message: "valid only during the hot path's call")
extension HTTPRequestHead: Sendable {}
