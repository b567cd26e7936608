import Glibc
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

extension UnsafeBufferPointer<UInt8> {
    /// Whether a field's bytes are exactly `bytes` (one `memcmp`, as the hot path compares them on every request).
    func hasSameBytes(as bytes: [UInt8]) -> Bool {
        count == bytes.count && bytes.withUnsafeBufferPointer { Self.memoryEqual(self, $0) }
    }

    /// Whether a field's bytes are exactly the UTF-8 of `text`.
    func hasSameBytes(as text: String) -> Bool {
        guard count == text.utf8.count else { return false }
        return text.utf8.withContiguousStorageIfAvailable { Self.memoryEqual(self, $0) } ?? elementsEqual(text.utf8)
    }

    private static func memoryEqual(_ a: Self, _ b: Self) -> Bool {
        a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }
}
