/// Entity tags and `If-None-Match` (RFC 9110 §8.8.3, §13.1.2), for `GET /query` and `/client.js`.
///
/// A representation's tag is `"<opaque>"`; its gzip-coded variant carries its own strong tag, `"<opaque>-gzip"`
/// (``gzipVariant(of:)``). `If-None-Match` naming either form matches the value, whichever coding the client asks for
/// now: both stand for the same content.
enum EntityTag {
    /// The tag of the gzip-coded representation of the one with tag `etag` (`"x"` → `"x-gzip"`).
    static func gzipVariant(of etag: String) -> String {
        guard etag.hasSuffix("\""), etag.count >= 2 else { return etag }
        return String(etag.dropLast()) + "-gzip\""
    }

    /// Whether an `If-None-Match` field value names the representation tagged `etag` or its gzip variant, by weak
    /// comparison (a `W/` prefix is ignored); `*` matches any current representation. The list is read up to its
    /// first malformed member.
    static func ifNoneMatch(_ field: String, matches etag: String) -> Bool {
        let gzip = gzipVariant(of: etag)
        var found = false
        forEachTag(in: field) { tag in
            if tag == "*" || tag == etag || tag == gzip {
                found = true
                return false
            }
            return true
        }
        return found
    }

    /// Calls `body` with each member of an entity-tag list (`"a", W/"b"` or `*`), quotes included and `W/` dropped,
    /// while it returns `true`.
    private static func forEachTag(in field: String, _ body: (Substring) -> Bool) {
        var rest = field[...]
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
            if rest.isEmpty { return }
            if rest.first == "*" {
                guard body(rest.prefix(1)) else { return }
                rest = rest.dropFirst()
                continue
            }
            if rest.hasPrefix("W/") { rest = rest.dropFirst(2) }
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else { return }
            let tag = rest[...close]
            guard body(tag) else { return }
            rest = rest[rest.index(after: close)...]
        }
    }
}
