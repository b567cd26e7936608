/// The query string as the client sent it must decode to UTF-8 text: libmicrohttpd hands the decoded parameters over
/// as bytes and they become Swift strings with every invalid byte replaced by U+FFFD, which would silently change an
/// argument. Checking the raw (still percent-encoded) query turns that into a clear 400 instead.
enum QueryText {
    /// `nil` when every `name=value` of `rawQuery` percent-decodes (with `+` as space) to valid UTF-8, otherwise the
    /// 400 naming the first parameter that does not.
    static func validate(_ rawQuery: String?) -> GatewayError? {
        guard let rawQuery, rawQuery.utf8.contains(UInt8(ascii: "%")) else { return nil }
        for item in rawQuery.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = item.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            for part in parts where String(validating: decode(part), as: UTF8.self) == nil {
                let name = String(decoding: decode(parts[0]), as: UTF8.self)
                return GatewayError.badRequest(
                    "Query parameter '\(printable(name))' is not valid UTF-8 once percent-decoded",
                    code: .invalidArguments)
            }
        }
        return nil
    }

    /// Percent-decodes `bytes`; a `%` not followed by two hex digits is kept as it is.
    static func decode(_ bytes: Substring.UTF8View.SubSequence) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index != bytes.endIndex,
                case let second = bytes.index(after: index), second != bytes.endIndex,
                let high = hexDigitValue(bytes[index]), let low = hexDigitValue(bytes[second])
            {
                out.append(high << 4 | low)
                index = bytes.index(after: second)
            } else {
                out.append(byte)
            }
        }
        return out
    }
}

/// The value of one hex digit of a percent-escape, `nil` for any other byte.
func hexDigitValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): c - 0x30
    case UInt8(ascii: "a")...UInt8(ascii: "f"): c - 0x61 + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): c - 0x41 + 10
    default: nil
    }
}
