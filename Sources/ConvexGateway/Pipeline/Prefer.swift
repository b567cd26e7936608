/// The `Prefer` request header (RFC 7240). The gateway honours one preference, `wait=<seconds>` (§4.3), on the
/// long-poll `GET` (`If-None-Match` with `Prefer: wait`); anything it does not understand is ignored, as the RFC asks.
enum Prefer {
    /// The first `wait` preference in `field` as whole seconds; `nil` when there is none or its value is not a
    /// delta-seconds (a malformed preference is ignored, not an error). Values past `Int.max` read as `Int.max`.
    static func wait(_ field: String?) -> Int? {
        guard let field else { return nil }
        for preference in field.split(separator: ",") {
            let token = preference.prefix { $0 != ";" }
            let pair = token.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair[0].trimmingWhitespace().lowercased() == "wait" else { continue }
            // Only the first instance of a preference counts (RFC 7240 §2).
            guard pair.count == 2 else { return nil }
            var value = pair[1].trimmingWhitespace()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = value.dropFirst().dropLast() }
            guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { return nil }
            return Int(value) ?? Int.max
        }
        return nil
    }

    /// The wait a long-poll `GET` (one with `If-None-Match`) asks for in its `Prefer` field, bounded by
    /// `--max-wait-seconds` (`maxSeconds`); `nil` when it asks for none or waiting is off (`maxSeconds` 0, and then
    /// the field is not read).
    static func longPollWait(_ field: @autoclosure () -> String?, maxSeconds: Int) -> Int? {
        guard maxSeconds > 0, let wait = wait(field()), wait > 0 else { return nil }
        return min(wait, maxSeconds)
    }
}
