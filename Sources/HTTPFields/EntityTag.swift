/// Entity tags and `If-None-Match` (RFC 9110 §8.8.3, §13.1.2), for `GET /query` and `/client.js`.
///
/// A representation's tag is `"<opaque>"`; its gzip-coded variant carries its own strong tag, `"<opaque>-gzip"`
/// (``gzipVariant(of:)``). `If-None-Match` naming either form matches the value, whichever coding the client asks for
/// now: both stand for the same content.
public enum EntityTag {
    /// The tag of the gzip-coded representation of the one with tag `etag` (`"x"` → `"x-gzip"`).
    public static func gzipVariant(of etag: String) -> String {
        guard etag.hasSuffix("\""), etag.count >= 2 else { return etag }
        return String(etag.dropLast()) + "-gzip\""
    }

    /// Whether an `If-None-Match` field value names the representation tagged `etag` or its gzip variant `gzip`
    /// (``gzipVariant(of:)``, passed in by callers that keep it), by weak comparison (a `W/` prefix is ignored); `*`
    /// matches any current representation. The list is read up to its first malformed member.
    public static func ifNoneMatch(_ field: String, matches etag: String, gzip: String? = nil) -> Bool {
        FieldValue.of(field) { ifNoneMatch($0, matches: etag, gzip: gzip) }
    }

    /// The same rules over the field's bytes, as the hot path reads them in place.
    public static func ifNoneMatch(_ field: FieldValue, matches etag: String, gzip: String? = nil) -> Bool {
        // The usual case, a client sending back the one tag it was given, costs one comparison.
        if field.hasSameBytes(as: etag) { return true }
        let gzip = gzip ?? gzipVariant(of: etag)
        if field.hasSameBytes(as: gzip) { return true }
        var found = false
        forEachTag(in: field.bytes) { tag in
            let tag = FieldValue(tag)
            found = tag.bytes.elementsEqual("*".utf8) || tag.hasSameBytes(as: etag) || tag.hasSameBytes(as: gzip)
            return !found
        }
        return found
    }

    /// Calls `body` with each member of an entity-tag list (`"a", W/"b"` or `*`), quotes included and `W/` dropped,
    /// while it returns `true`.
    private static func forEachTag(in bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        let quote = UInt8(ascii: "\"")
        var i = 0
        while true {
            while i < bytes.count,
                bytes[i] == UInt8(ascii: " ") || bytes[i] == UInt8(ascii: "\t")
                    || bytes[i] == UInt8(ascii: ",")
            {
                i += 1
            }
            if i == bytes.count { return }
            if bytes[i] == UInt8(ascii: "*") {
                guard body(UnsafeBufferPointer(rebasing: bytes[i..<i + 1])) else { return }
                i += 1
                continue
            }
            if bytes.count - i >= 2, bytes[i] == UInt8(ascii: "W"), bytes[i + 1] == UInt8(ascii: "/") { i += 2 }
            guard i < bytes.count, bytes[i] == quote,
                let close = bytes[(i + 1)...].firstIndex(of: quote)
            else { return }
            guard body(UnsafeBufferPointer(rebasing: bytes[i...close])) else { return }
            i = close + 1
        }
    }
}
