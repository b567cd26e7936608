/// The gateway's one percent-decoder, strict: a `%` must be followed by two hex digits. The query string and the
/// function path in the URL both decode through it (MicroHTTPD's `HTTPQueryItem` keeps libmicrohttpd's lenient rule
/// for servers that want it; the gateway does not read it).
enum PercentDecoding {
    /// The bytes `text` stands for, with `+` as a space when `plusIsSpace` (form encoding, the query string);
    /// `nil` when a `%` is not followed by two hex digits.
    static func decode(_ text: Substring.UTF8View.SubSequence, plusIsSpace: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            index = text.index(after: index)
            if byte == UInt8(ascii: "+"), plusIsSpace {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                guard index != text.endIndex, case let second = text.index(after: index), second != text.endIndex,
                    let high = hexDigitValue(text[index]), let low = hexDigitValue(text[second])
                else { return nil }
                out.append(high << 4 | low)
                index = text.index(after: second)
            } else {
                out.append(byte)
            }
        }
        return out
    }

    /// The value of one hex digit of a percent-escape, `nil` for any other byte.
    private static func hexDigitValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - 0x30
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - 0x61 + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - 0x41 + 10
        default: nil
        }
    }
}
