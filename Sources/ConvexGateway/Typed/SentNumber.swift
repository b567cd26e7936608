/// The text a client wrote for a JSON number, found again in the body it sent: a number beyond 2^53 is read as the
/// nearest float64 (9007199254740993 as 9007199254740992), so a refusal of it quotes what was sent, not what it became.
enum SentNumber {
    /// The one whole-number literal of `json` (outside strings) that reads as `value`; `nil` when there is none, or
    /// several different ones (the refusal then quotes the number as read).
    static func text(readAs value: Double, in json: [UInt8]) -> String? {
        var found: Set<String> = []
        var index = 0
        while index < json.count {
            let byte = json[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                while index < json.count, json[index] != UInt8(ascii: "\"") {
                    index += json[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                index += 1
            } else if byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                let start = index
                index += 1
                while index < json.count, isNumberByte(json[index]) { index += 1 }
                let literal = String(decoding: json[start..<index], as: UTF8.self)
                if literal.allSatisfy({ $0 == "-" || $0.isASCII && $0.isNumber }), Double(literal) == value {
                    found.insert(literal)
                }
            } else {
                index += 1
            }
        }
        return found.count == 1 ? found.first : nil
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e")
            || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
    }
}
