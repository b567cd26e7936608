import Foundation
import MicroHTTPD
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Malformed request heads", .serialized, .timeLimit(.minutes(5)))
struct MalformedHeadTests {
    /// What came back on one connection: every byte until the server closed it (or fell silent).
    struct Exchange {
        var bytes: [UInt8]
        var closed: Bool

        var text: String { String(decoding: bytes, as: UTF8.self) }
        /// The status lines, however many heads came back (one may follow a body directly).
        var statusLines: [Substring] {
            text.components(separatedBy: "HTTP/1.").dropFirst().map { "HTTP/1." + $0.prefix { $0 != "\r" } }
                .map { Substring($0) }
        }
        var status: Int? { statusLines.first.flatMap { Int($0.split(separator: " ")[1]) } }
        /// The body after the first head.
        var body: String {
            guard let end = text.range(of: "\r\n\r\n") else { return "" }
            return String(text[end.upperBound...])
        }
    }

    /// Sends `bytes` on a new connection and reads until the server closes it, or sends nothing for `quiet` once it
    /// has answered. No answer at all within 10 s is a failure: nothing may be left waiting for the idle timeout.
    @available(*, noasync)
    static func exchange(_ port: Int, _ bytes: [UInt8], quiet: Int32 = 1500) throws -> Exchange {
        let connection = try RawConnection(port: port)
        defer { connection.close() }
        try? connection.send(bytes)  // the server may answer and close before it reads everything
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            var descriptor = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, received.isEmpty ? 10_000 : quiet) == 1 else {
                if received.isEmpty { throw TestFailure("no answer within 10 s") }
                return Exchange(bytes: received, closed: false)
            }
            let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return Exchange(bytes: received, closed: true) }
            received += chunk[0..<count]
        }
    }

    @available(*, noasync)
    static func exchange(_ port: Int, _ text: String) throws -> Exchange {
        try exchange(port, Array(text.utf8))
    }

    /// Answers the server's own refusals with their identifier, so that each case can tell which it got.
    static func configuration(_ adjust: (inout HTTPServerConfiguration) -> Void = { _ in }) -> HTTPServerConfiguration {
        testConfiguration {
            $0.rejectionResponse = { rejection in
                HTTPResponse(
                    status: rejection.status, headers: ["Content-Type": "text/plain"], body: rejection.identifier)
            }
            adjust(&$0)
        }
    }

    /// Runs `body` with the port of a server of `configuration` whose handler records each request's target (in the
    /// box `body` gets) and answers 200.
    static func withRecordingServer(
        _ configuration: HTTPServerConfiguration, _ body: (Int, Box<[String]>) async throws -> Void
    ) async throws {
        let seen = Box<[String]>([])
        let handler: HTTPHandler = { request, responder in
            seen.update { $0.append(request.target ?? "") }
            responder.respond(HTTPResponse(body: "served \(request.target ?? "") \(request.body.count)"))
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: handler) { server in
            try await body(try #require(server.port), seen)
        }
    }

    static let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    @Test(
        "a head with a field the server would not read as a proxy does is refused once, and its connection closed",
        arguments: [
            (
                "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"
                    + smuggled, 400, "invalid_field_name"
            ),
            (
                "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"
                    + smuggled, 400, "obsolete_line_folding"
            ),
            (
                "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400,
                "invalid_transfer_encoding"
            ),
            ("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "invalid_transfer_encoding"),
            (
                "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 501,
                "unsupported_transfer_coding"
            ),
            (
                "GET /p HTTP/1.1\r\nHost: x\r\nX-API-Key: right\0wrong\r\n\r\n" + smuggled, 400,
                "invalid_character_in_head"
            ),
            ("GET /p HTTP/1.1\r\nX-API-Key: right\0wrong\r\nHost: x\r\n\r\n", 400, "invalid_character_in_head"),
            ("GET /p HTTP/1.1\r\nHost: x\r\nX-Note: a\rb\r\n\r\n", 400, "invalid_character_in_head"),
            ("GET /p\0/../q HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid_character_in_head"),
            ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}", 400, "invalid_content_length"),
            ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n", 400, "invalid_content_length"),
            (
                "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413,
                "payload_too_large"
            ),
            (
                "GET /p HTTP/1.1\r\nHost: x\r\nCookie: " + String(repeating: "c", count: 10000) + "\r\n\r\n", 431,
                "header_fields_too_large"
            ),
        ])
    func refusedOnce(request: String, status: Int, identifier: String) async throws {
        try await Self.withRecordingServer(Self.configuration()) { port, seen in
            let exchange = try await blocking { try Self.exchange(port, request) }
            #expect(exchange.statusLines.count == 1, "\(exchange.text)")
            #expect(exchange.status == status)
            #expect(exchange.body == identifier)
            #expect(exchange.closed, "nothing after the head is read as another request")
            #expect(seen.value.isEmpty, "the handler never sees it")
            // The server goes on serving.
            let after = try await blocking { try RawConnection.get("/after", port: port) }
            #expect(after.status == 200)
        }
    }

    @Test(
        "heads written well are served, the hot path's too",
        arguments: [false, true])
    func wellFormedHeads(hotPath: Bool) async throws {
        let quick = try HTTPPreparedResponse(HTTPResponse(body: "quick"))
        let configuration = Self.configuration {
            if hotPath { $0.hotPath = { head in head.target == "/hot" ? quick : nil } }
        }
        try await Self.withRecordingServer(configuration) { port, _ in
            let requests = [
                "GET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Blank: \t \r\nX-Trailing: v \r\nX-Tab:\tv\r\n\r\n",
                "GET /lf HTTP/1.1\nHost: x\nX-A: 1\n\n",
                "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                "POST /length HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n{}",
                "GET /caf%C3%A9 HTTP/1.1\r\nHost: x\r\nX-Text: caf\u{E9}\r\n\r\n",
                "GET /hot HTTP/1.1\r\nHost: x\r\n\r\n",
                "GET /hot HTTP/1.0\r\n\r\n",
            ]
            let texts = try await blocking {
                let connection = try RawConnection(port: port)
                return try requests.map { request in
                    try connection.send(request)
                    return try connection.readResponse().text
                }
            }
            let hot = hotPath ? "quick" : "served /hot 0"
            #expect(
                texts == [
                    "served /a?b=1 0", "served /lf 0", "served /chunked 2", "served /length 2", "served /caf%C3%A9 0",
                    hot, hot,
                ])
        }
    }

    @Test("a malformed head after a good one on a keep-alive connection is refused alone, the hot path's too")
    func malformedAfterGood() async throws {
        let quick = try HTTPPreparedResponse(HTTPResponse(body: "quick"))
        try await Self.withRecordingServer(Self.configuration { $0.hotPath = { _ in quick } }) { port, seen in
            let exchange = try await blocking {
                try Self.exchange(
                    port,
                    "GET /first HTTP/1.1\r\nHost: x\r\nX-API-Key: right\r\n\r\n"
                        + "GET /second HTTP/1.1\r\nHost: x\r\nX-API-Key: right\0wrong\r\n\r\n" + Self.smuggled)
            }
            #expect(exchange.statusLines.map { $0.split(separator: " ")[1] } == ["200", "400"], "\(exchange.text)")
            #expect(exchange.text.hasSuffix("\r\n\r\ninvalid_character_in_head"))
            #expect(exchange.closed)
            #expect(seen.value.isEmpty, "the hot path answered the first, nothing reached the handler")
        }
    }

    @Test("the server's answer in place of libmicrohttpd's goes out once with a head timeout running too")
    func refusedOnceWithTheGuard() async throws {
        try await Self.withRecordingServer(Self.configuration { $0.headerTimeout = .seconds(1) }) { port, seen in
            let exchange = try await blocking {
                try Self.exchange(
                    port, Array("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n".utf8), quiet: 2000)
            }
            #expect(exchange.statusLines.count == 1, "\(exchange.text)")
            #expect(exchange.body == "invalid_content_length")
            #expect(exchange.closed)
            #expect(seen.value.isEmpty)
            let after = try await blocking { try RawConnection.get("/after", port: port) }
            #expect(after.status == 200)
        }
    }

    @Test("whatever a malformed request gets, it gets at most one answer")
    func malformedRequestsAreAnsweredAtMostOnce() async throws {
        var random = [UInt8](repeating: 0, count: 4096)
        for index in random.indices { random[index] = UInt8.random(in: 0...255) }
        let cases: [(String, [UInt8])] = [
            ("garbage line", Array("HELLO\r\n\r\n".utf8)),
            ("method only", Array("GET\r\n\r\n".utf8)),
            ("HTTP/0.9", Array("GET /p\r\n\r\n".utf8)),
            ("unknown version", Array("GET /p HTTP/9.9\r\nHost: x\r\n\r\n".utf8)),
            ("header without colon", Array("GET /p HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n".utf8)),
            ("second header without colon", Array("GET /p HTTP/1.1\r\nHost: x\r\nA: b\r\nBad Line\r\n\r\n".utf8)),
            ("NUL before a colon", Array("GET /p HTTP/1.1\r\nHost: x\r\nX\0-Key: v\r\n\r\n".utf8)),
            ("bad Content-Length", Array("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}".utf8)),
            ("bad chunk", Array("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n\r\n".utf8)),
            ("NUL in request line", Array("GET /p\0q HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
            ("HTTP/2 preface", Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)),
            ("bare LF", Array("GET /p HTTP/1.1\nHost: x\nConnection: close\n\n".utf8)),
            (
                "large Cookie",
                Array("GET /p HTTP/1.1\r\nHost: x\r\nCookie: \(String(repeating: "c", count: 9000))\r\n\r\n".utf8)
            ),
            ("long line", Array("GET /\(String(repeating: "p", count: 20000)) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
            ("random bytes", random),
        ]
        try await withHTTPServer(
            configuration: Self.configuration(), logger: quietLogger, handler: staticHandler("ok")
        ) { server in
            let port = try #require(server.port)
            for (name, bytes) in cases {
                let exchange = await blocking { () -> Exchange? in try? Self.exchange(port, bytes) }
                // Closed without a word is a clean answer too; silence is not.
                let answered = try #require(exchange, "\(name): no answer, no close")
                #expect(answered.statusLines.count <= 1, "\(name): \(answered.text.prefix(600))")
                let after = try await blocking { try RawConnection.get("/after", port: port) }
                #expect(after.status == 200, "after \(name)")
            }
        }
    }
}
