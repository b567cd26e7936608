import ConvexValues
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile clients against the real `convex-gateway` process: each test checks that the gateway answers with the
/// right status or closes the connection cleanly, that a normal request succeeds after every case, and that the
/// process's descriptors come back to where they were and its memory stays within a bound.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct HostileInputTests {
    /// How a raw exchange ended.
    enum Outcome: Equatable, CustomStringConvertible {
        case status(Int)
        case closed
        var description: String {
            switch self {
            case .status(let s): "status \(s)"
            case .closed: "closed"
            }
        }
    }

    /// Sends `bytes` on a fresh connection and reads the answer; a connection the gateway closes without an answer is
    /// `.closed`. Silence for `timeout` seconds is a failure (the gateway must never leave a client hanging).
    static func exchange(_ port: Int, _ bytes: [UInt8], timeout: Int = 10) throws -> (Outcome, TestResponse?) {
        let connection = try RawConnection(port: port, receiveTimeoutSeconds: timeout)
        defer { connection.close() }
        try? connection.send(bytes)  // the gateway may answer and close before reading everything
        do {
            let response = try connection.readResponse()
            return (.status(response.status), response)
        } catch {
            if "\(error)".contains("errno \(EAGAIN)") {
                throw TestFailure("no answer within \(timeout) s")
            }
            return (.closed, nil)
        }
    }

    static func exchange(_ port: Int, _ text: String, timeout: Int = 10) throws -> (Outcome, TestResponse?) {
        try exchange(port, Array(text.utf8), timeout: timeout)
    }

    /// A normal request that must succeed.
    static func expectServing(_ port: Int, after what: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let response = try await blocking { try RawConnection.get("/query/echo:echo?probe=1", port: port) }
        #expect(response.status == 200, "gateway stopped serving after \(what)", sourceLocation: sourceLocation)
        #expect(response.text == #"{"probe":1.0}"# || response.text == #"{"probe":1}"#, sourceLocation: sourceLocation)
    }

    /// A gateway error body: `{"error":{"code":…,"message":…}}`.
    static func errorCode(_ response: TestResponse?) -> String? {
        guard let response, let value = try? ConvexValue(plainJSON: response.body),
            case .string(let code)? = value["error"]?["code"], case .string? = value["error"]?["message"]
        else { return nil }
        return code
    }

    static func warmedUp(_ gateway: GatewayProcess) async throws -> GatewayProcess.Usage {
        try await expectServing(gateway.port, after: "start")
        // Quiet once the gateway has closed the probe's connection: the baseline does not count its descriptor.
        #expect(await eventually { gateway.acceptedSocketCount == 0 }, "the gateway kept the probe's connection")
        return gateway.usage()
    }

    @Test func malformedHTTPGetsAnErrorOrACleanClose() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            var randomBytes = [UInt8](repeating: 0, count: 4096)
            for i in randomBytes.indices { randomBytes[i] = UInt8.random(in: 0...255) }
            let cases: [(String, [UInt8])] = [
                ("garbage line", Array("HELLO\r\n\r\n".utf8)),
                ("method only", Array("GET\r\n\r\n".utf8)),
                ("HTTP/0.9", Array("GET /healthz\r\n\r\n".utf8)),
                ("unknown version", Array("GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n".utf8)),
                ("no Host", Array("GET /healthz HTTP/1.1\r\n\r\n".utf8)),
                (
                    "header without colon",
                    Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n".utf8)
                ),
                (
                    "bad Content-Length",
                    Array(
                        "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n{}".utf8
                    )
                ),
                (
                    "two Content-Lengths",
                    Array(
                        "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 9\r\n\r\n{}"
                            .utf8)
                ),
                (
                    "Content-Length and Transfer-Encoding",
                    Array(
                        "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                            .utf8)
                ),
                (
                    "bad chunk",
                    Array(
                        "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n\r\n"
                            .utf8)
                ),
                ("NUL in request line", Array("GET /hea\u{0}lthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)),
                ("HTTP/2 preface", Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)),
                ("bare LF", Array("GET /healthz HTTP/1.1\nHost: x\n\n".utf8)),
                ("random bytes", randomBytes),
                (
                    "truncated then closed",
                    Array(
                        "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"bo"
                            .utf8)
                ),
            ]
            for (name, bytes) in cases {
                let outcome: Outcome
                if name == "truncated then closed" {
                    // The client gives up mid-body: nothing to answer, the gateway must just let go.
                    let connection = try RawConnection(port: port)
                    try await blocking { try connection.send(bytes) }
                    connection.close()
                    outcome = .closed
                } else {
                    outcome = try await blocking { try Self.exchange(port, bytes) }.0
                }
                switch outcome {
                case .closed: break
                case .status(let status):
                    #expect((400..<600).contains(status) && status != 500 || status == 200, "\(name): \(outcome)")
                }
                try await Self.expectServing(port, after: name)
            }
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    /// Sends `bytes` on a fresh connection and reads until the gateway closes it, or sends nothing more for a second
    /// once it has answered: the status of every response head that came back, the first response's body, and whether
    /// the connection closed. Silence for 10 s before any answer is a failure.
    @available(*, noasync)
    static func answers(_ port: Int, _ bytes: [UInt8]) throws -> (statuses: [Int], body: [UInt8], closed: Bool) {
        let connection = try RawConnection(port: port)
        defer { connection.close() }
        try? connection.send(bytes)  // the gateway may answer and close before reading everything
        var received: [UInt8] = []
        var closed = false
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            var descriptor = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, received.isEmpty ? 10_000 : 1000) == 1 else {
                if received.isEmpty { throw TestFailure("no answer within 10 s") }
                break
            }
            let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 {
                closed = true
                break
            }
            received += chunk[0..<count]
        }
        // A second head may follow a body directly: every "HTTP/1.x NNN" counts.
        let text = String(decoding: received, as: UTF8.self)
        let statuses = text.components(separatedBy: "HTTP/1.").dropFirst().compactMap { rest in
            Int(rest.dropFirst(2).prefix(3))
        }
        let body = text.range(of: "\r\n\r\n").map { Array(text[$0.upperBound...].utf8) } ?? []
        return (statuses, body, closed)
    }

    @Test func headsAProxyWouldReadOtherwiseAreRefusedOnceAndClosed() async throws {
        let key = "secretkey123"
        try await TestGateway.run(.process, environment: ["GATEWAY_API_KEY": key]) { gateway in
            let port = gateway.port
            func expectServing(after what: String) async throws {
                let response = try await blocking {
                    try RawConnection.get("/query/echo:echo?probe=1", port: port, headers: "X-API-Key: \(key)\r\n")
                }
                #expect(response.status == 200, "gateway stopped serving after \(what)")
            }
            try await expectServing(after: "start")
            #expect(await eventually { gateway.acceptedSocketCount == 0 }, "the gateway kept the probe's connection")
            let baseline = gateway.usage()
            let head = "Host: 127.0.0.1\r\nX-API-Key: \(key)\r\n"
            let send = "POST /mutation/messages:send HTTP/1.1\r\n\(head)"
            // What a proxy that honours the other reading would pass on as a second request.
            let smuggled = "GET /query/echo:echo?smuggled=1 HTTP/1.1\r\n\(head)\r\n"
            let cases: [(String, String, Int)] = [
                (
                    "whitespace before a colon",
                    "\(send)Content-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n\(smuggled)", 400
                ),
                (
                    "a folded Transfer-Encoding",
                    "\(send)Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n\(smuggled)", 400
                ),
                ("chunked, identity", "\(send)Transfer-Encoding: chunked, identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400),
                ("gzip alone", "\(send)Transfer-Encoding: gzip\r\n\r\n{}", 400),
                ("gzip, chunked", "\(send)Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 501),
                (
                    "a NUL in the API key",
                    "GET /query/echo:echo?probe=1 HTTP/1.1\r\nX-API-Key: \(key)\u{0}junk\r\nHost: 127.0.0.1\r\n\r\n",
                    400
                ),
                (
                    "a NUL in the last field",
                    "GET /query/echo:echo?probe=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: \(key)\u{0}junk\r\n\r\n"
                        + smuggled, 400
                ),
                ("a bare CR in a value", "GET /query/echo:echo?probe=1 HTTP/1.1\r\n\(head)X-Note: a\rb\r\n\r\n", 400),
                ("a NUL in the target", "GET /query/echo:echo\u{0}/../x HTTP/1.1\r\n\(head)\r\n", 400),
                ("a Content-Length that is no number", "\(send)Content-Length: 2x\r\n\r\n{}", 400),
                ("a Content-Length past 64 bits", "\(send)Content-Length: 99999999999999999999999\r\n\r\n", 413),
                (
                    "a Cookie too large to parse",
                    "GET /query/echo:echo?probe=1 HTTP/1.1\r\n\(head)Cookie: \(String(repeating: "c", count: 9000))\r\n\r\n",
                    431
                ),
            ]
            for (name, request, expected) in cases {
                let (statuses, body, closed) = try await blocking { try Self.answers(port, Array(request.utf8)) }
                #expect(statuses == [expected], "\(name): \(statuses)")
                #expect(closed, "\(name): the connection stayed open")
                let error = try? ConvexValue(plainJSON: body)
                let isErrorShape =
                    if case .string? = error?["error"]?["code"], case .string? = error?["error"]?["message"] {
                        true
                    } else {
                        false
                    }
                #expect(isErrorShape, "\(name): not the error shape: \(String(decoding: body, as: UTF8.self))")
                try await expectServing(after: name)
            }
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func malformedHTTPIsAnsweredAtMostOnce() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            let post = "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            let cases: [(String, String)] = [
                ("garbage line", "HELLO\r\n\r\n"),
                ("method only", "GET\r\n\r\n"),
                ("HTTP/0.9", "GET /healthz\r\n\r\n"),
                ("unknown version", "GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n"),
                ("header without colon", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n"),
                ("bad Content-Length", "\(post)Content-Length: abc\r\n\r\n{}"),
                ("Content-Length past 64 bits", "\(post)Content-Length: 99999999999999999999999\r\n\r\n"),
                ("two Content-Lengths", "\(post)Content-Length: 2\r\nContent-Length: 9\r\n\r\n{}"),
                ("bad chunk", "\(post)Transfer-Encoding: chunked\r\n\r\nZZZ\r\n\r\n"),
                ("NUL in request line", "GET /hea\u{0}lthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
                ("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
                ("bare LF", "GET /healthz HTTP/1.1\nHost: x\nConnection: close\n\n"),
                (
                    "large Cookie",
                    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: \(String(repeating: "c", count: 9000))\r\n\r\n"
                ),
            ]
            for (name, request) in cases {
                let (statuses, _, _) = try await blocking { try Self.answers(port, Array(request.utf8)) }
                #expect(statuses.count <= 1, "\(name): \(statuses)")
                try await Self.expectServing(port, after: name)
            }
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func hugeHeadersAndMultiMegabyteURLsAreRefused() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            let bigHeader =
                "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "a", count: 1 << 20))\r\n\r\n"
            let manyHeaders =
                "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + (0..<2000).map { "X-H\($0): v\r\n" }.joined() + "\r\n"
            let bigQuery =
                "GET /query/echo:echo?x=\(String(repeating: "q", count: 4 << 20)) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            let bigArgs =
                "GET /query/echo:echo?args=%7B%22a%22%3A%22\(String(repeating: "z", count: 2 << 20))%22%7D HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            for (name, request, expected) in [
                ("1 MiB header", bigHeader, 431), ("2000 headers", manyHeaders, 431),
                ("4 MiB query string", bigQuery, 414), ("2 MiB args", bigArgs, 414),
            ] {
                let (outcome, _) = try await blocking { try Self.exchange(port, request) }
                #expect(outcome == .status(expected) || outcome == .closed, "\(name): \(outcome)")
                try await Self.expectServing(port, after: name)
            }
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func invalidUTF8IsRefusedWithTheErrorShape() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            func raw(_ parts: [UInt8]...) -> [UInt8] { parts.flatMap { $0 } }
            let cases: [(String, [UInt8], Set<Int>)] = [
                (
                    "raw bytes in path",
                    raw(Array("GET /query/".utf8), [0xFF, 0xFE], Array(":x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)),
                    [400]
                ),
                ("encoded bytes in path", Array("GET /query/%FF%FE:x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), [400]),
                (
                    "encoded bytes in args JSON",
                    Array(
                        "GET /query/echo:echo?args=%7B%22a%22%3A%22%FF%22%7D HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8),
                    [400]
                ),
                (
                    "encoded bytes in a parameter name",
                    Array("GET /query/echo:echo?%C0%AF=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), [400]
                ),
                (
                    "truncated sequence in a stream's arguments",
                    Array("GET /subscribe/echo:echo?t=%E2%82 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), [400]
                ),
                (
                    "raw bytes in body",
                    raw(
                        Array(
                            "POST /mutation/echo:echoMutation HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"a\":\""
                                .utf8), [0xFF, 0xC0], Array("\"}".utf8)), [400]
                ),
                (
                    "overlong encoding in body",
                    raw(
                        Array(
                            "POST /mutation/echo:echoMutation HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n{\"a\":\""
                                .utf8), [0xC0, 0xAF], Array("\"}".utf8)), [400]
                ),
                (
                    "raw bytes in bearer token",
                    raw(
                        Array("GET /query/echo:echo HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ".utf8),
                        [0xFF, 0xFE],
                        Array("\r\n\r\n".utf8)), [401]
                ),
                (
                    "encoded bytes in a key=value argument",
                    Array("GET /query/echo:echo?name=%FF%FE HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), [400]
                ),
                (
                    "valid encoded UTF-8 still works",
                    Array("GET /query/echo:echo?name=%C3%A9%E2%82%AC+x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), [200]
                ),
            ]
            for (name, bytes, expected) in cases {
                let (outcome, response) = try await blocking { try Self.exchange(port, bytes) }
                guard case .status(let status) = outcome else {
                    Issue.record("\(name): the gateway closed instead of answering")
                    continue
                }
                #expect(expected.contains(status), "\(name): \(status) \(response?.text ?? "")")
                if status >= 400 {
                    #expect(Self.errorCode(response) != nil, "\(name): not the error shape: \(response?.text ?? "")")
                } else if let response {
                    #expect(String(validating: response.body, as: UTF8.self) != nil, "\(name): invalid UTF-8 sent back")
                }
                try await Self.expectServing(port, after: name)
            }
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func jsonNestedPast64LevelsIsRefused() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            func nested(_ depth: Int) -> String {
                #"{"v":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
            }
            let shallowBody = Array(nested(30).utf8)
            let shallow = try await blocking {
                try RawConnection.request("POST", "/mutation/echo:echoMutation", port: port, body: shallowBody)
            }
            #expect(shallow.status == 200)
            for depth in [65, 100, 10_000, 1_000_000] {
                let body = Array(nested(depth).utf8)
                let response = try await blocking {
                    try RawConnection.request("POST", "/mutation/echo:echoMutation", port: port, body: body)
                }
                #expect(response.status == 400, "depth \(depth)")
                #expect(["MalformedJSON", "InvalidArguments"].contains(Self.errorCode(response)), "depth \(depth)")
                try await Self.expectServing(port, after: "JSON nested \(depth) deep")
            }
            // The same through the query string.
            let deepArgs =
                "%7B%22v%22%3A" + String(repeating: "%5B", count: 200) + String(repeating: "%5D", count: 200) + "%7D"
            let query = try await blocking { try RawConnection.get("/query/echo:echo?args=\(deepArgs)", port: port) }
            #expect(query.status == 400)
            // A key=value argument that is not valid JSON (here: too deep) is a string, by the documented rule.
            let deepText = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
            let deepValue = try await blocking {
                try RawConnection.get(
                    "/query/echo:echo?v=" + String(repeating: "%5B", count: 500) + String(repeating: "%5D", count: 500),
                    port: port)
            }
            #expect(deepValue.status == 200)
            #expect(deepValue.json?["v"] == .string(deepText))
            try await Self.expectServing(port, after: "deep query-string JSON")
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func oddFunctionNamesAre400NeverARouteEscape() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            let invalid = [
                "/query/", "/query/../etc:passwd", "/query/%2e%2e/etc:passwd", "/query/a%2Fb:c", "/query/a%2fb:c",
                "/query/a%3Ab:c", "/query/a%00:b", "/query//x:y", "/query/x:y/", "/query/%", "/query/%zz:y",
                "/query/x:1abc", "/query/messages:list/../../metrics", "/subscribe/../x:y", "/mutation/.:x",
                "/action/a/./b:c", "/query/" + String(repeating: "a", count: 2000), "/query/a:b%0D%0AX-Injected:1",
                "/query/a%20b:c", "/query/a:b:c", "/query/a.b:c", "/query/dir/file.ts:fn", "/query/m.js.js:f",
            ]
            for target in invalid {
                let method = target.hasPrefix("/mutation/") || target.hasPrefix("/action/") ? "POST" : "GET"
                let response = try await blocking {
                    try RawConnection.request(method, target, port: port, body: method == "POST" ? [] : nil)
                }
                #expect(response.status == 400, "\(target): \(response.status) \(response.text)")
                #expect(Self.errorCode(response) == "InvalidFunctionPath", "\(target): \(response.text)")
                #expect(response.header("X-Injected") == nil)
            }
            // Encoded ':' is just a ':'; unknown names are 404; nothing outside the function routes is reachable.
            #expect(try await blocking { try RawConnection.get("/query/echo%3Aecho", port: port) }.status == 200)
            let unknown = try await blocking { try RawConnection.get("/query/no/such:thing", port: port) }
            #expect(unknown.status == 404)
            #expect(Self.errorCode(unknown) == "FunctionNotFound")
            let traversal = try await blocking { try RawConnection.get("/../healthz", port: port) }
            #expect(traversal.status == 404)
            try await Self.expectServing(port, after: "odd function names")
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func lineBreaksAndDataPrefixesInValuesNeverBreakEventFraming() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            let payload = "a\r\ndata: injected\r\n\r\nevent: error\nid: 999\r\r\n: comment\n\ndata:x\u{2028}end"
            let body = ConvexValue.object(["body": .string(payload), "channel": "frames"]).convexJSONString
            #expect(
                try await blocking {
                    try RawConnection.request("POST", "/mutation/messages:send", port: port, body: Array(body.utf8))
                }.status == 200)
            for format in ["plain", "clean", "encoded"] {
                let stream = try await blocking {
                    try EventStreamReader(
                        port: port, target: "/subscribe/messages:list?channel=frames&format=\(format)")
                }
                defer { stream.close() }
                let event = try #require(try await blocking { try stream.nextEvent() })
                #expect(event.event == nil, "\(format)")
                let value = try ConvexValue(plainJSON: Array(event.data.utf8))
                #expect(value[0]?["body"] == .string(payload), "\(format): \(event.data)")
            }
            // The same value sent back through key=value arguments, then a change: the next event must be the change,
            // not something the payload smuggled in.
            let encoded = payload.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let echo = try await blocking {
                try EventStreamReader(port: port, target: "/subscribe/echo:echo?text=\(encoded)")
            }
            defer { echo.close() }
            let echoed = try #require(try await blocking { try echo.nextEvent() })
            #expect(try ConvexValue(plainJSON: Array(echoed.data.utf8))["text"] == .string(payload))

            let stream = try await blocking {
                try EventStreamReader(port: port, target: "/subscribe/messages:list?channel=frames")
            }
            defer { stream.close() }
            _ = try #require(try await blocking { try stream.nextEvent() })
            let second = ConvexValue.object(["body": "second", "channel": "frames"]).convexJSONString
            _ = try await blocking {
                try RawConnection.request("POST", "/mutation/messages:send", port: port, body: Array(second.utf8))
            }
            let next = try #require(try await blocking { try stream.nextEvent() })
            #expect(next.event == nil)
            let list = try ConvexValue(plainJSON: Array(next.data.utf8))
            #expect(list[1]?["body"] == "second")
            #expect(list[0]?["body"] == .string(payload))
            try await Self.expectServing(port, after: "event framing")
            stream.close()
            echo.close()
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func streamsThatNeverReadDelayNobody() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            // Twenty readers that never read, with tiny receive buffers.
            var stalled: [RawConnection] = []
            for _ in 0..<20 {
                let connection = try RawConnection(port: port)
                var size: Int32 = 2048
                setsockopt(connection.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
                try await blocking {
                    try connection.send(
                        "GET /subscribe/messages:list?channel=flood HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                }
                stalled.append(connection)
            }
            let reader = try await blocking {
                try EventStreamReader(port: port, target: "/subscribe/messages:list?channel=flood")
            }
            defer { reader.close() }
            _ = try #require(try await blocking { try reader.nextEvent() })
            // Each change makes the value bigger: 40 messages of 8 KiB, 320 KiB at the end.
            let chunk = String(repeating: "x", count: 8192)
            for i in 0..<40 {
                let body = ConvexValue.object(["body": .string("\(i) \(chunk)"), "channel": "flood"])
                    .convexJSONString
                let sent = try await blocking {
                    try RawConnection.request("POST", "/mutation/messages:send", port: port, body: Array(body.utf8))
                }
                #expect(sent.status == 200)
            }
            // The reader that keeps up sees the last value promptly.
            // Real time: a generous bound on reading events that must come (a reader that keeps up beside stalled ones).
            let start = ContinuousClock.now
            var latestCount = 0
            while latestCount < 40 && ContinuousClock.now - start < .seconds(20) {
                guard let event = try await blocking({ try reader.nextEvent() }) else { break }
                if case .array(let items)? = try? ConvexValue(plainJSON: Array(event.data.utf8)) {
                    latestCount = items.count
                }
            }
            #expect(latestCount == 40)
            try await Self.expectServing(port, after: "stalled streams")
            stalled.forEach { $0.close() }
            reader.close()
            await gateway.expectNoLeaks(since: baseline)
        }
    }

    @Test func thousandsOfConnectionsOpenedAndDropped() async throws {
        try await TestGateway.run(.process) { gateway in
            let port = gateway.port
            let baseline = try await Self.warmedUp(gateway)
            let total = 2000
            let batch = 200
            try await blocking {
                for round in 0..<(total / batch) {
                    var connections: [RawConnection] = []
                    for i in 0..<batch {
                        let connection = try RawConnection(port: port)
                        switch (round + i) % 4 {
                        case 0: break  // connect and leave
                        case 1: try? connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  // half a request
                        case 2:  // a whole request whose answer is never read
                            try? connection.send("GET /query/echo:echo?i=\(i) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                        default:
                            try? connection.send(
                                "GET /subscribe/messages:list?channel=drop HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                            // Reset instead of a clean close.
                            var reset = linger(l_onoff: 1, l_linger: 0)
                            setsockopt(
                                connection.fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
                        }
                        connections.append(connection)
                    }
                    connections.forEach { $0.close() }
                }
            }
            try await Self.expectServing(port, after: "\(total) dropped connections")
            let health = try await blocking { try RawConnection.get("/healthz", port: port) }
            #expect(health.status == 200)
            await gateway.expectNoLeaks(since: baseline)
        }
    }
}
