import Glibc
import MicroHTTPD

/// A request's header fields as the access stage and the representation rules read them: by name (ASCII
/// case-insensitive), as bytes. Full handling reads them from a `String`; the hot `GET` path reads them in place from
/// libmicrohttpd's buffers (``HTTPRequestHead``), so a header that is only compared costs no `String`.
public protocol HeaderFields {
    /// Calls `body` with the first field named `name`, or with `nil` when none was sent.
    func withField<R>(_ name: String, _ body: (FieldValue?) -> R) -> R
}

extension HTTPRequestHead: HeaderFields {
    public func withField<R>(_ name: String, _ body: (FieldValue?) -> R) -> R {
        withHeader(name) { bytes in body(bytes.map(FieldValue.init)) }
    }
}

/// One header field's value as bytes, valid only inside the `withField` call that gave it.
public struct FieldValue: RandomAccessCollection {
    let bytes: UnsafeBufferPointer<UInt8>

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Calls `body` with the UTF-8 bytes of `text` as a field value (full handling's fields are `String`s).
    public static func of<R>(_ text: String, _ body: (FieldValue) -> R) -> R {
        var text = text
        return text.withUTF8 { body(FieldValue($0)) }
    }

    public var startIndex: Int { bytes.startIndex }
    public var endIndex: Int { bytes.endIndex }
    public subscript(position: Int) -> UInt8 { bytes[position] }

    /// The value as text (invalid UTF-8 repaired).
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Whether the value's bytes are exactly `bytes` (one `memcmp`, as the hot path compares them on every request).
    public func hasSameBytes(as bytes: [UInt8]) -> Bool {
        self.bytes.count == bytes.count && bytes.withUnsafeBufferPointer { Self.memoryEqual(self.bytes, $0) }
    }

    /// Whether the value's bytes are exactly the UTF-8 of `text`.
    public func hasSameBytes(as text: String) -> Bool {
        guard bytes.count == text.utf8.count else { return false }
        return text.utf8.withContiguousStorageIfAvailable { Self.memoryEqual(bytes, $0) }
            ?? bytes.elementsEqual(text.utf8)
    }

    static func memoryEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }
}
