/// `Accept-Encoding` (RFC 9110 §12.5.3), read byte by byte: the hot path asks it on every request.
public enum AcceptEncoding {
    /// Whether an `Accept-Encoding` field value accepts gzip: `gzip` (or `x-gzip`) with a non-zero weight, or else
    /// `*` with a non-zero weight. No field, or `gzip;q=0`, means no. Read byte by byte: the hot path asks it on
    /// every request.
    public static func acceptsGzip(_ field: String?) -> Bool {
        guard let field else { return false }
        return FieldValue.of(field) { acceptsGzip($0) }
    }

    /// The same rules over the field's bytes, as the hot path reads them in place.
    public static func acceptsGzip(_ field: FieldValue?) -> Bool {
        guard let bytes = field?.bytes, !bytes.isEmpty else { return false }
        var wildcard: Bool?
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.count
            let nameEnd = bytes[start..<end].firstIndex(of: UInt8(ascii: ";")) ?? end
            let name = trimmed(bytes[start..<nameEnd])
            let isGzip = equalsIgnoringCase(name, "gzip") || equalsIgnoringCase(name, "x-gzip")
            if isGzip || name.elementsEqual("*".utf8) {
                var accepted = true
                var parameterStart = nameEnd + 1
                while parameterStart < end {
                    let parameterEnd = bytes[parameterStart..<end].firstIndex(of: UInt8(ascii: ";")) ?? end
                    let parameter = bytes[parameterStart..<parameterEnd]
                    if let equals = parameter.firstIndex(of: UInt8(ascii: "=")),
                        equalsIgnoringCase(trimmed(parameter[..<equals]), "q")
                    {
                        accepted = isPositiveWeight(trimmed(parameter[(equals + 1)...]))
                    }
                    parameterStart = parameterEnd + 1
                }
                if isGzip { return accepted }
                wildcard = accepted
            }
            start = end + 1
        }
        return wildcard ?? false
    }

    /// Whether a weight (`0`, `0.5`, `1.000`) is above zero; a malformed one counts as zero (the client said
    /// something, and not clearly "yes").
    private static func isPositiveWeight(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard let first = text.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return false }
        let rest = text.dropFirst()
        if rest.isEmpty { return first == UInt8(ascii: "1") }
        guard rest.first == UInt8(ascii: "."),
            rest.dropFirst().allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return false }
        return first == UInt8(ascii: "1") || rest.dropFirst().contains { $0 != UInt8(ascii: "0") }
    }

    private static func trimmed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Slice<UnsafeBufferPointer<UInt8>> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) })
        else { return bytes[bytes.startIndex..<bytes.startIndex] }
        return bytes[start...end]
    }

    private static func equalsIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString)
        -> Bool
    {
        bytes.count == lowercase.utf8CodeUnitCount
            && zip(bytes, UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount))
                .allSatisfy { ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0) == $1 }
    }
}
