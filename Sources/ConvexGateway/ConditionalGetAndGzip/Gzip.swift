import CompressNIO
import NIOCore

/// gzip for response bodies (RFC 9110 §8.4, §12.5.3): bodies from ``minimumBytes`` are sent gzip-coded to clients
/// whose `Accept-Encoding` accepts gzip. Event streams are never compressed (a compressor per connection would cost
/// more memory than the stream itself).
enum ContentCoding {
    /// Smaller bodies are sent as they are: the gzip header and a round of zlib cost more than they save.
    static let minimumBytes = 1024

    /// Whether an `Accept-Encoding` field value accepts gzip: `gzip` (or `x-gzip`) with a non-zero weight, or else
    /// `*` with a non-zero weight. No field, or `gzip;q=0`, means no. Read byte by byte: the hot path asks it on
    /// every request.
    static func acceptsGzip(_ field: String?) -> Bool {
        guard var field else { return false }
        return field.withUTF8 { acceptsGzip($0) }
    }

    /// The same rules over the field's bytes, as the hot path reads them in place.
    static func acceptsGzip(_ field: UnsafeBufferPointer<UInt8>?) -> Bool {
        guard let bytes = field, !bytes.isEmpty else { return false }
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

    /// `body` gzip-coded (zlib's default level), or `nil` if zlib failed.
    static func gzip(_ body: [UInt8]) -> [UInt8]? {
        var buffer = ByteBuffer(bytes: body)
        guard let compressed = try? buffer.compress(with: .gzip()) else { return nil }
        return Array(compressed.readableBytesView)
    }
}
