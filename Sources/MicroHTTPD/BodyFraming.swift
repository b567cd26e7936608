#if canImport(Glibc)
    import Glibc
#endif

/// How a request says where its body ends, from its `Content-Length` and `Transfer-Encoding` fields, and whether
/// libmicrohttpd 0.9.75 reads it the way any proxy in front would.
///
/// libmicrohttpd reads a body as chunked only when the first `Transfer-Encoding` field's value is `chunked` exactly
/// (any case); any other `Transfer-Encoding` makes it read until the connection closes, so the client waits for an
/// answer until the idle timeout. With a `Transfer-Encoding` it ignores `Content-Length`, and of several
/// `Content-Length`s it takes the first. Every other reading is refused (RFC 9112 §6.1, §6.3).
struct BodyFraming {
    /// The first `Content-Length` value; only while the head's fields are being read (it points into them).
    private var firstLength: UnsafeRawBufferPointer?
    /// A later `Content-Length` differs from the first.
    private var lengthsDiffer = false
    /// The values of the `Transfer-Encoding` fields, in order.
    private var transferEncodings: [String] = []
    /// Whether the first `Transfer-Encoding` value is `chunked` as libmicrohttpd compares it (ASCII, any case).
    private var firstTransferEncodingIsChunked = false

    /// Whether the request has a `Content-Length` field.
    var declaresLength: Bool { firstLength != nil }
    /// Whether the request has a `Transfer-Encoding` field.
    var isTransferEncoded: Bool { !transferEncodings.isEmpty }

    /// Takes note of one header field.
    mutating func field(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let base = name.baseAddress else { return }
        if name.count == 14, strncasecmp(base, "Content-Length", 14) == 0 {
            if let firstLength {
                lengthsDiffer =
                    lengthsDiffer || firstLength.count != value.count
                    || (value.count > 0 && memcmp(firstLength.baseAddress!, value.baseAddress!, value.count) != 0)
            } else {
                firstLength = value
            }
        } else if name.count == 17, strncasecmp(base, "Transfer-Encoding", 17) == 0 {
            if transferEncodings.isEmpty {
                firstTransferEncodingIsChunked =
                    value.count == 7 && zip(value, "chunked".utf8).allSatisfy { $0 | 0x20 == $1 }
            }
            transferEncodings.append(String(decoding: value, as: UTF8.self))
        }
    }

    /// Why the body cannot be read as the client means it, if it cannot.
    var rejection: HTTPServerRejection? {
        if lengthsDiffer || (declaresLength && isTransferEncoded) {
            return .ambiguousBodyLength
        }
        guard isTransferEncoded else { return nil }
        if transferEncodings.count == 1, firstTransferEncodingIsChunked {
            return nil
        }
        return Self.refusal(of: transferEncodings)
    }

    /// The refusal of `Transfer-Encoding` field values libmicrohttpd does not read as chunked: 501 when they end with
    /// `chunked` (once) after codings the server does not decode, else 400 (no length can be told).
    static func refusal(of transferEncodings: [String]) -> HTTPServerRejection {
        let codings = transferEncodings.flatMap { $0.split(separator: ",") }
            .map { $0.trimmingWhitespace().lowercased() }
            .filter { !$0.isEmpty }
        let chunkedOnceAndLast = codings.last == "chunked" && codings.count(where: { $0 == "chunked" }) == 1
        return chunkedOnceAndLast && codings.count > 1 ? .unsupportedTransferCoding : .invalidTransferEncoding
    }
}

extension Substring {
    /// Without the spaces and tabs around it (RFC 9110 `OWS`).
    fileprivate func trimmingWhitespace() -> Substring {
        let isWhitespace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isWhitespace($0) }), let last = lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return self[first...last]
    }
}
