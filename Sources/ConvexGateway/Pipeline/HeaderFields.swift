import MicroHTTPD

/// A request's header fields as the access stage and the representation rules read them: by name (ASCII
/// case-insensitive), as bytes. Full handling reads them from its ``GatewayRequest``; the hot `GET` path reads them in
/// place from libmicrohttpd's buffers (``HTTPRequestHead``), so a header that is only compared costs no `String`.
protocol HeaderFields {
    /// Calls `body` with the bytes of the first field named `name`, or with `nil` when none was sent.
    func withField<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R
}

extension GatewayRequest: HeaderFields {
    func withField<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard var value = header(name) else { return body(nil) }
        return value.withUTF8 { body($0) }
    }
}

extension HTTPRequestHead: HeaderFields {
    func withField<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        withHeader(name, body)
    }
}
