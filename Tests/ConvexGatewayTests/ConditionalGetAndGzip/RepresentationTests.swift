import CompressNIO
import HTTPFields
import NIOCore
import Testing

@testable import ConvexGateway

/// The rules that pick a response's representation (ConditionalGetAndGzip/): `If-None-Match`,
/// `Accept-Encoding` and `Prefer`, as RFC 9110 and RFC 7240 read them.
@Suite struct RepresentationTests {
    static let etag = #""00000000000000ab-plain""#

    @Test(arguments: [
        (#""00000000000000ab-plain""#, true),
        (#"W/"00000000000000ab-plain""#, true),
        (#""00000000000000ab-plain-gzip""#, true),
        (#"W/"00000000000000ab-plain-gzip""#, true),
        (#""other", "00000000000000ab-plain""#, true),
        (#""a,b",W/"00000000000000ab-plain""#, true),
        ("*", true),
        (#""00000000000000ab-clean""#, false),
        (#""00000000000000ab""#, false),
        ("00000000000000ab-plain", false),
        (#""unterminated, "00000000000000ab-plain""#, false),
        ("", false),
    ])
    func ifNoneMatchComparesWeaklyAndAcceptsEitherCoding(field: String, matches: Bool) {
        #expect(EntityTag.ifNoneMatch(field, matches: Self.etag) == matches)
    }

    @Test func theGzipVariantHasItsOwnStrongTag() {
        #expect(EntityTag.gzipVariant(of: Self.etag) == #""00000000000000ab-plain-gzip""#)
    }

    @Test(arguments: [
        ("gzip", true),
        ("GZIP", true),
        ("x-gzip", true),
        ("gzip, deflate, br, zstd", true),
        ("br;q=1.0, gzip;q=0.8", true),
        ("gzip ; q=0.5", true),
        ("gzip;q=0", false),
        ("gzip;q=0.000", false),
        ("gzip;q=nonsense", false),
        ("deflate, br", false),
        ("identity", false),
        ("*", true),
        ("*;q=0", false),
        ("gzip;q=0, *", false),
        ("br, *;q=0.1", true),
        ("", false),
    ])
    func acceptEncodingReadsWeights(field: String, gzip: Bool) {
        #expect(AcceptEncoding.acceptsGzip(field) == gzip)
    }

    /// The `Accept` check the parse stage and the hot path share: a stream is asked for in any letter case.
    @Test(arguments: [
        ("text/event-stream", true),
        ("TEXT/Event-Stream", true),
        ("application/json, text/event-stream;q=0.9", true),
        ("text/event", false),
        ("text/event-streams", true),
        ("text/eventstream", false),
        ("*/*", false),
        ("", false),
    ])
    func anEventStreamIsAskedForInAnyLetterCase(field: String, wanted: Bool) {
        #expect(Accept.acceptsEventStream(field) == wanted)
    }

    @Test func noAcceptEncodingMeansIdentity() {
        #expect(!AcceptEncoding.acceptsGzip(nil as String?))
    }

    @Test(
        arguments: [
            ("wait=10", 10),
            ("respond-async, wait=5", 5),
            ("wait = 7", 7),
            (#"wait="3""#, 3),
            ("WAIT=4;foo=bar", 4),
            ("wait=5, wait=9", 5),
            ("wait=0", 0),
            ("wait=99999999999999999999999", Int.max),
            ("wait=abc", nil),
            ("wait=-1", nil),
            ("wait=1.5", nil),
            ("wait=", nil),
            ("wait", nil),
            ("handling=lenient", nil),
            ("", nil),
        ] as [(String, Int?)])
    func preferWaitIgnoresWhatItCannotRead(field: String, seconds: Int?) {
        #expect(Prefer.wait(field) == seconds)
    }

    static func value(bytes: Int) -> GatewayResponse {
        var response = GatewayResponse.json(Array(repeating: UInt8(ascii: "7"), count: bytes))
        response.headers.append(("ETag", etag))
        return response
    }

    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        var buffer = ByteBuffer(bytes: bytes)
        return Array(try buffer.decompress(with: .gzip()).readableBytesView)
    }

    @Test func aBodyFromOneKiBIsGzipCodedWhenAccepted() throws {
        let response = Self.value(bytes: 1024)
        let gzip = response.negotiated(RepresentationPreferences(acceptsGzip: true)) {
            ContentCoding.gzip(response.body)
        }
        #expect(gzip.status == 200)
        #expect(gzip.header("Content-Encoding") == "gzip")
        #expect(gzip.header("Vary") == "Accept-Encoding")
        #expect(gzip.header("ETag") == EntityTag.gzipVariant(of: Self.etag))
        #expect(try Self.gunzip(gzip.body) == response.body)

        let identity = response.negotiated(.identity) {
            Issue.record("compressed for identity"); return nil
        }
        #expect(identity.body == response.body)
        #expect(identity.header("Content-Encoding") == nil)
        #expect(identity.header("Vary") == "Accept-Encoding", "the answer varies even when not compressed")
        #expect(identity.header("ETag") == Self.etag)
    }

    @Test func aSmallBodyIsSentAsItIs() {
        let response = Self.value(bytes: 1023)
        let answer = response.negotiated(RepresentationPreferences(acceptsGzip: true)) {
            Issue.record("compressed a small body")
            return nil
        }
        #expect(answer.body == response.body)
        #expect(answer.header("Content-Encoding") == nil)
        #expect(answer.header("Vary") == nil)
    }

    @Test func aMatchingIfNoneMatchIsA304OfTheRepresentationTheClientWouldGet() {
        let response = Self.value(bytes: 4096)
        let preferences = RepresentationPreferences(acceptsGzip: true, ifNoneMatch: Self.etag)
        let answer = response.negotiated(preferences) { [1, 2, 3] }
        #expect(answer.status == 304)
        // The body the 200 would send: libmicrohttpd sends none with a 304, but gives its length as Content-Length.
        #expect(answer.body == [1, 2, 3])
        #expect(answer.header("Content-Type") == nil)
        #expect(answer.header("Content-Encoding") == nil)
        #expect(answer.header("Vary") == "Accept-Encoding")
        #expect(answer.header("ETag") == EntityTag.gzipVariant(of: Self.etag))

        let small = Self.value(bytes: 10).negotiated(RepresentationPreferences(ifNoneMatch: "W/\(Self.etag)")) { nil }
        #expect(small.status == 304)
        #expect(small.body.count == 10)
        #expect(small.header("ETag") == Self.etag)
    }

    @Test func onlyA200WithAnETagIsConditional() {
        var error = Self.value(bytes: 10)
        error.status = 500
        #expect(error.negotiated(RepresentationPreferences(ifNoneMatch: "*")) { nil }.status == 500)
        let untagged = GatewayResponse.json(Array("{}".utf8))
        #expect(untagged.negotiated(RepresentationPreferences(ifNoneMatch: "*")) { nil }.status == 200)
    }

    @Test func aCodedBodyIsNotCodedAgain() {
        var response = Self.value(bytes: 4096)
        response.headers.append(("Content-Encoding", "br"))
        let answer = response.negotiated(RepresentationPreferences(acceptsGzip: true)) {
            Issue.record("compressed twice")
            return nil
        }
        #expect(answer.body == response.body)
    }
}
