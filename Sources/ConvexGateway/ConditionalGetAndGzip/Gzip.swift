import CompressNIO
import HTTPFields
import NIOCore

/// gzip for response bodies (RFC 9110 §8.4, §12.5.3): bodies from ``minimumBytes`` are sent gzip-coded to clients
/// whose `Accept-Encoding` accepts gzip. Event streams are never compressed (a compressor per connection would cost
/// more memory than the stream itself).
enum ContentCoding {
    /// Smaller bodies are sent as they are: the gzip header and a round of zlib cost more than they save.
    static let minimumBytes = 1024

    /// `body` gzip-coded (zlib's default level), or `nil` if zlib failed.
    static func gzip(_ body: [UInt8]) -> [UInt8]? {
        var buffer = ByteBuffer(bytes: body)
        guard let compressed = try? buffer.compress(with: .gzip()) else { return nil }
        return Array(compressed.readableBytesView)
    }
}
