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

/// The byte rules of a `Host` field, read in place: the hot path asks them on every `GET`.
public enum HostField {
    /// Whether a `Host` value (`host[:port]` or `[v6][:port]`; spaces around it and a final dot allowed) names a loopback
    /// address: `localhost`, a name under `.localhost`, `127.x.x.x`, or `[::1]` (`::1` alone too).
    public static func namesLoopback(_ field: FieldValue) -> Bool {
        let bytes = field.bytes
        var start = 0
        var end = bytes.count
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09) { end -= 1 }
        if start < end && bytes[start] == UInt8(ascii: "[") {
            var close = start + 1
            while close < end && bytes[close] != UInt8(ascii: "]") { close += 1 }
            return close < end && matches(bytes, start + 1, close, "::1")
        }
        if matches(bytes, start, end, "::1") { return true }
        var colon = end - 1
        while colon >= start && bytes[colon] != UInt8(ascii: ":") { colon -= 1 }
        if colon >= start {
            var index = colon + 1
            while index < end {
                if bytes[index] < 0x30 || bytes[index] > 0x39 { return false }
                index += 1
            }
            end = colon
        }
        if end > start && bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
        if matches(bytes, start, end, "localhost") { return true }
        if end - start > 10 && matches(bytes, end - 10, end, ".localhost") { return true }
        return isLoopbackIPv4(bytes, start, end)
    }

    /// `127.a.b.c` between `start` and `end`, each part a decimal number up to 255.
    private static func isLoopbackIPv4(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        var parts = 0
        var value = 0
        var digits = 0
        var first = -1
        var index = start
        while index < end {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: ".") {
                if digits == 0 { return false }
                if parts == 0 { first = value }
                parts += 1
                value = 0
                digits = 0
            } else if byte >= 0x30 && byte <= 0x39 {
                value = value * 10 + Int(byte - 0x30)
                digits += 1
                if digits > 3 || value > 255 { return false }
            } else {
                return false
            }
        }
        return parts == 3 && digits > 0 && first == 127
    }

    /// Whether the bytes between `start` and `end` are the ASCII `text`, letters in either case.
    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ text: StaticString)
        -> Bool
    {
        guard end - start == text.utf8CodeUnitCount else { return false }
        let expected = text.utf8Start
        var index = 0
        while index < end - start {
            let byte = bytes[start + index]
            let want = expected[index]
            let isLetter = (want | 0x20) >= UInt8(ascii: "a") && (want | 0x20) <= UInt8(ascii: "z")
            if byte != want && !(isLetter && byte | 0x20 == want | 0x20) { return false }
            index += 1
        }
        return true
    }
}
