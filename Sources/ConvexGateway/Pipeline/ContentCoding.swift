import CompressNIO
import NIOCore

/// gzip for response bodies (RFC 9110 §8.4, §12.5.3): bodies from ``minimumBytes`` are sent gzip-coded to clients
/// whose `Accept-Encoding` accepts gzip. Event streams are never compressed (a compressor per connection would cost
/// more memory than the stream itself).
enum ContentCoding {
    /// Smaller bodies are sent as they are: the gzip header and a round of zlib cost more than they save.
    static let minimumBytes = 1024

    /// Whether an `Accept-Encoding` field value accepts gzip: `gzip` (or `x-gzip`) with a non-zero weight, or else
    /// `*` with a non-zero weight. No field, or `gzip;q=0`, means no.
    static func acceptsGzip(_ field: String?) -> Bool {
        guard let field, !field.isEmpty else { return false }
        var wildcard: Bool?
        for member in field.split(separator: ",") {
            var parts = member.split(separator: ";").makeIterator()
            guard let name = parts.next()?.trimmingWhitespace().lowercased() else { continue }
            var weight = 1.0
            while let parameter = parts.next() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingWhitespace().lowercased() == "q" else { continue }
                // A malformed weight counts as 0: the client said something, and not clearly "yes".
                weight = Double(pair[1].trimmingWhitespace()) ?? 0
            }
            switch name {
            case "gzip", "x-gzip": return weight > 0
            case "*": wildcard = weight > 0
            default: continue
            }
        }
        return wildcard ?? false
    }

    /// `body` gzip-coded (zlib's default level), or `nil` if zlib failed.
    static func gzip(_ body: [UInt8]) -> [UInt8]? {
        var buffer = ByteBuffer(bytes: body)
        guard let compressed = try? buffer.compress(with: .gzip()) else { return nil }
        return Array(compressed.readableBytesView)
    }
}
