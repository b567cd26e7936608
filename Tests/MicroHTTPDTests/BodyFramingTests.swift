import Testing

@testable import MicroHTTPD

@Suite("How a request's body length is read")
struct BodyFramingTests {
    /// The framing of `fields`, each handed over as libmicrohttpd does: pointers into one buffer that outlives them.
    private static func framing(_ fields: [(String, String)]) -> BodyFraming {
        let bytes = Array(fields.map { $0.0 + $0.1 }.joined().utf8)
        var framing = BodyFraming()
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            for (name, value) in fields {
                let nameCount = name.utf8.count
                let valueCount = value.utf8.count
                framing.field(
                    name: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + nameCount)]),
                    value: UnsafeRawBufferPointer(
                        rebasing: buffer[(offset + nameCount)..<(offset + nameCount + valueCount)]))
                offset += nameCount + valueCount
            }
        }
        return framing
    }

    @Test(
        "one length, or one Transfer-Encoding of chunked, is read",
        arguments: [
            [("Host", "x")],
            [("Content-Length", "5")],
            [("content-length", "2"), ("Content-Length", "2")],
            [("Transfer-Encoding", "chunked")],
            [("transfer-encoding", "Chunked")],
            [("Transfer-Encoding", "CHUNKED")],
        ])
    func readable(_ fields: [(String, String)]) {
        #expect(Self.framing(fields).rejection == nil)
    }

    @Test(
        "a length given two ways is ambiguous",
        arguments: [
            [("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
            [("Transfer-Encoding", "chunked"), ("Content-Length", "5")],
            [("Content-Length", "2"), ("content-length", "9")],
            [("Content-Length", "2"), ("Content-Length", "")],
            [("Content-Length", "5"), ("Transfer-Encoding", "gzip")],
        ])
    func ambiguous(_ fields: [(String, String)]) {
        #expect(Self.framing(fields).rejection == .ambiguousBodyLength)
    }

    @Test(
        "a Transfer-Encoding that does not end with chunked once, or that libmicrohttpd would not read as chunked, is 400",
        arguments: [
            [("Transfer-Encoding", "chunked, identity")],
            [("Transfer-Encoding", "identity")],
            [("Transfer-Encoding", "gzip")],
            [("Transfer-Encoding", "chunked, chunked")],
            [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")],
            [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "gzip")],
            [("Transfer-Encoding", "")],
            [("Transfer-Encoding", "chunked ")],
            [("Transfer-Encoding", "chunked,")],
            [("Transfer-Encoding", "chun\u{212A}ed")],
        ])
    func notChunked(_ fields: [(String, String)]) {
        #expect(Self.framing(fields).rejection == .invalidTransferEncoding)
    }

    @Test(
        "chunked last after a coding the server does not decode is 501",
        arguments: [
            [("Transfer-Encoding", "gzip, chunked")],
            [("Transfer-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
            [("Transfer-Encoding", "deflate,Chunked")],
        ])
    func unsupported(_ fields: [(String, String)]) {
        #expect(Self.framing(fields).rejection == .unsupportedTransferCoding)
    }

    @Test("what the head declares decides whether the hot path may wait for the second call")
    func declarations() {
        #expect(!Self.framing([("Host", "x")]).declaresLength)
        #expect(!Self.framing([("Host", "x")]).isTransferEncoded)
        #expect(Self.framing([("Content-Length", "0")]).declaresLength)
        #expect(Self.framing([("Transfer-Encoding", "chunked")]).isTransferEncoded)
    }
}
