import ConvexSyncProtocol

/// The query string, percent-decoded once, strictly: every name and value must decode to UTF-8 text (with `+` as a
/// space, as forms send it). Values stay text here; the argument stage decides what each one means.
struct QueryString: Sendable, Equatable {
    struct Parameter: Sendable, Equatable {
        var name: String
        /// `nil` for a bare `name` without `=`.
        var value: String?
    }

    var parameters: [Parameter]

    init(_ parameters: [Parameter] = []) {
        self.parameters = parameters
    }

    /// Decodes the raw query (after `?`, still percent-encoded). Empty `&&` items are skipped.
    /// - Throws: 400 naming the first parameter that is not UTF-8 once decoded, or that has a malformed escape.
    init(raw: Substring?) throws(GatewayError) {
        var parameters: [Parameter] = []
        guard let raw, !raw.isEmpty else {
            self.init(parameters)
            return
        }
        for item in raw.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = item.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let shownName = String(decoding: Self.decode(parts[0]) ?? Array(parts[0]), as: UTF8.self)
            func text(_ part: Substring.UTF8View.SubSequence) throws(GatewayError) -> String {
                guard let bytes = Self.decode(part) else {
                    throw GatewayError.badRequest(
                        "Query parameter '\(printable(shownName))' has a malformed percent-escape; write % as %25",
                        code: .invalidArguments)
                }
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw GatewayError.badRequest(
                        "Query parameter '\(printable(shownName))' is not valid UTF-8 once percent-decoded",
                        code: .invalidArguments)
                }
                return text
            }
            parameters.append(Parameter(name: try text(parts[0]), value: parts.count == 2 ? try text(parts[1]) : nil))
        }
        self.init(parameters)
    }

    /// The values given for `name`, in order.
    func values(named name: String) -> [String?] {
        parameters.filter { $0.name == name }.map(\.value)
    }

    /// Percent-decodes `bytes` (`+` is a space); `nil` when a `%` is not followed by two hex digits.
    static func decode(_ bytes: Substring.UTF8View.SubSequence) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                guard index != bytes.endIndex, case let second = bytes.index(after: index), second != bytes.endIndex,
                    let high = hexDigitValue(bytes[index]), let low = hexDigitValue(bytes[second])
                else { return nil }
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

/// Text safe to echo in an error message: control characters and non-ASCII become `\u{…}` escapes, long text is cut.
func printable(_ text: String, limit: Int = 200) -> String {
    UdfPathError.printable(text, limit: limit)
}
