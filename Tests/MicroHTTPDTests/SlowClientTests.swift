import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

/// Clients that hold the server by sending slowly, or by taking more than their share, through a real server:
/// ``HTTPServerConfiguration/headerTimeout``, ``HTTPServerConfiguration/minimumBodyRate``,
/// ``HTTPServerConfiguration/maxConnectionsPerAddress`` and ``HTTPServerConfiguration/maxBodyBytesPerAddress``.
/// Another client is another loopback address (127.0.0.2: all of 127/8 is loopback on Linux).
@Suite("Slow and greedy clients", .serialized, .timeLimit(.minutes(5)))
struct SlowClientTests {
    /// Sends `lines` one at a time, `interval` apart, until the server stops taking them; run it in a task of its own.
    static func trickle(_ lines: [String], on connection: RawConnection, every interval: Duration) async throws {
        for line in lines {
            // Real time: the attack is a client that sends slowly, under the idle timeout; no clock can stand for it.
            try await Task.sleep(for: interval)
            try await blocking { try connection.send(line) }
        }
    }

    /// Answers with the length of the request's body.
    static let bodyLength: HTTPHandler = { request, responder in
        responder.respond(HTTPResponse(body: "\(request.body.count)"))
    }

    @Test("a head trickled in under the idle timeout gets 408 after the header timeout, and its connection closes")
    func trickledHead() async throws {
        let configuration = testConfiguration {
            $0.headerTimeout = .seconds(1)
            $0.idleTimeoutSeconds = 30
            $0.rejectionResponse = jsonRejection
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: staticHandler("ok")) {
            server in
            let port = try #require(server.port)
            let baseline = server.activeConnectionCount
            // Real time: how long the server took to answer, from before the connect (so before its accept).
            let clock = ContinuousClock()
            let start = clock.now
            let connection = try RawConnection(port: port)
            try await blocking { try connection.send("GET / HTTP/1.1\r\nHost: x\r\n") }
            // A header line every 200 ms, each of which restarts libmicrohttpd's idle timeout, for up to 10 s.
            let lines = (0..<50).map { "X-Line-\($0): \($0)\r\n" }
            let trickling = Task { try await Self.trickle(lines, on: connection, every: .milliseconds(200)) }
            defer { trickling.cancel() }
            let (response, closed) = try await step("the 408") {
                try await blocking { (try connection.readResponse(), connection.waitForClose()) }
            }
            let elapsed = clock.now - start
            #expect(response.status == 408)
            #expect(response.text == #"{"code":"request_timeout","status":408}"#)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(closed)
            #expect(elapsed >= .seconds(1), "not before the header timeout")
            #expect(
                elapsed < .seconds(8), "the header timeout's answer (checked every half second), not the idle one's")
            // libmicrohttpd closed the connection itself, with its notification.
            #expect(await eventually { server.activeConnectionCount == baseline })
            #expect(server.connectionGuard?.timedConnectionCount == 0)

            // A client that sends its head at once is served, and its keep-alive connection outlives the timeout.
            let prompt = try RawConnection(port: port)
            let first = try await step("a prompt request") {
                try await blocking {
                    try prompt.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    return try prompt.readResponse()
                }
            }
            #expect(first.status == 200)
            // Real time: the keep-alive connection must outlast the header timeout, which only its first head has.
            try await Task.sleep(for: .milliseconds(1600))
            let second = try await step("a later request on the same connection") {
                try await blocking {
                    try prompt.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    return try prompt.readResponse()
                }
            }
            #expect(second.status == 200)
        }
    }

    @Test("a connection that says nothing gets 408 after the header timeout too")
    func silentConnection() async throws {
        let configuration = testConfiguration {
            $0.headerTimeout = .seconds(1)
            $0.rejectionResponse = jsonRejection
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: staticHandler("ok")) {
            server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port)
            let (response, closed) = try await step("the 408") {
                try await blocking { (try connection.readResponse(), connection.waitForClose()) }
            }
            #expect(response.status == 408)
            #expect(closed)
            #expect(await eventually { server.activeConnectionCount == 0 })
        }
    }

    @Test("a body trickled in gets 408, and its bytes go back to the bound: a bystander's body then fits")
    func trickledBody() async throws {
        let configuration = testConfiguration {
            $0.maxBodySize = 4000
            $0.maxBodyBytesInFlight = 4000
            $0.minimumBodyRate = (bytes: 200, per: .seconds(1))
            $0.idleTimeoutSeconds = 30
            $0.rejectionResponse = jsonRejection
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: Self.bodyLength) {
            server in
            let port = try #require(server.port)
            let slow = try RawConnection(port: port)
            try await blocking {
                try slow.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\n")
                try slow.send(Array(repeating: UInt8(ascii: "a"), count: 3990))
            }
            #expect(await eventually { server.bodyBytesInFlight == 3990 })
            // The slow body holds the bound: a bystander's body is refused.
            let bystander = [UInt8](repeating: UInt8(ascii: "b"), count: 1000)
            let refused = try await step("the bystander's 503") {
                try await blocking { try RawConnection.request("POST", "/bystander", port: port, body: bystander) }
            }
            #expect(refused.status == 503)

            // Then one byte every 250 ms, each restarting the idle timeout: far below 200 bytes a second.
            let trickling = Task {
                try await Self.trickle(Array(repeating: "a", count: 40), on: slow, every: .milliseconds(250))
            }
            defer { trickling.cancel() }
            let (response, closed) = try await step("the slow body's 408") {
                try await blocking { (try slow.readResponse(), slow.waitForClose()) }
            }
            #expect(response.status == 408)
            #expect(response.text == #"{"code":"request_timeout","status":408}"#)
            #expect(closed)
            #expect(await eventually { server.bodyBytesInFlight == 0 })
            #expect(await eventually { server.activeConnectionCount == 0 })

            let served = try await step("the bystander's answer") {
                try await blocking { try RawConnection.request("POST", "/bystander", port: port, body: bystander) }
            }
            #expect(served.status == 200)
            #expect(served.text == "1000")
            #expect(await eventually { server.bodyBytesInFlight == 0 })
        }
    }

    @Test("a body that keeps up with the rate, over several windows, is served")
    func steadyBody() async throws {
        let configuration = testConfiguration {
            $0.minimumBodyRate = (bytes: 200, per: .seconds(1))
            $0.rejectionResponse = jsonRejection
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: Self.bodyLength) {
            server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port)
            try await blocking {
                try connection.send("POST /steady HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n")
            }
            // 250 bytes every 400 ms: at least one piece in any window, which is at least a second long.
            try await Self.trickle(
                Array(repeating: String(repeating: "s", count: 250), count: 8), on: connection,
                every: .milliseconds(400))
            let response = try await step("the steady body's answer") {
                try await blocking { try connection.readResponse() }
            }
            #expect(response.status == 200)
            #expect(response.text == "2000")
            #expect(server.connectionGuard?.timedConnectionCount == 0)
        }
    }

    @Test("the connection beyond an address's share gets 429 at once; the address's others and other addresses work")
    func connectionsPerAddress() async throws {
        let configuration = testConfiguration {
            $0.maxConnectionsPerAddress = 3
            $0.rejectionResponse = jsonRejection
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: staticHandler("ok")) {
            server in
            let port = try #require(server.port)
            /// One keep-alive request on `connection`: its status.
            @Sendable func get(_ connection: RawConnection) throws -> Int {
                try connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                return try connection.readResponse().status
            }
            let held = try (0..<3).map { _ in try RawConnection(port: port) }
            #expect(try await blocking { try held.map(get) } == [200, 200, 200])

            // The fourth from 127.0.0.1 is answered before it sends anything, and closed.
            let (refused, closed) = try await step("the 429") {
                try await blocking {
                    let connection = try RawConnection(port: port)
                    return (try connection.readResponse(), connection.waitForClose())
                }
            }
            #expect(refused.status == 429)
            #expect(refused.text == #"{"code":"too_many_connections_from_address","status":429}"#)
            #expect(refused.header("Connection")?.lowercased() == "close")
            #expect(closed)

            // The address's own connections still work, and so does another address's.
            #expect(try await blocking { try held.map(get) } == [200, 200, 200])
            let other = try RawConnection(port: port, source: "127.0.0.2")
            #expect(try await blocking { try get(other) } == 200)
            #expect(await eventually { server.activeConnectionCount == 4 }, "the refused one is closed")

            // A closed connection gives its slot back, and the refused one held none: exactly one more fits.
            held[0].close()
            #expect(await eventually { server.activeConnectionCount == 3 })
            let replacement = try RawConnection(port: port)
            #expect(try await blocking { try get(replacement) } == 200)
            let beyond = try await step("the second 429") {
                try await blocking { try RawConnection(port: port).readResponse() }
            }
            #expect(beyond.status == 429)
            other.close()
            replacement.close()
            for connection in held { connection.close() }
            #expect(await eventually { server.activeConnectionCount == 0 })
        }
    }

    @Test("a second large body from one address gets 429 while the bound has room; another address's body fits")
    func bodyShare() async throws {
        // The handler keeps each request unanswered, so its body stays in flight until the test answers it.
        let held = Box<[String: HTTPResponder]>([:])
        let handler: HTTPHandler = { request, responder in held.update { $0[request.path] = responder } }
        let configuration = testConfiguration {
            $0.maxBodySize = 1000
            $0.maxBodyBytesInFlight = 4000
            $0.maxBodyBytesPerAddress = 1500
            $0.rejectionResponse = jsonRejection
        }
        let body = String(repeating: "a", count: 1000)
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: handler) { server in
            let port = try #require(server.port)
            let first = try RawConnection(port: port)
            try await blocking {
                try first.send("POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n\(body)")
            }
            #expect(await eventually { held.value.count == 1 })
            #expect(server.bodyBytesInFlight == 1000)

            // The second from 127.0.0.1: refused from its head, its body never read, with room left in the bound.
            let (refused, closed) = try await step("the second body's 429") {
                try await blocking {
                    let connection = try RawConnection(port: port)
                    try connection.send("POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
                    return (try connection.readResponse(), connection.waitForClose())
                }
            }
            #expect(refused.status == 429)
            #expect(refused.text == #"{"code":"body_share_reached","status":429}"#)
            #expect(refused.header("Connection")?.lowercased() == "close")
            #expect(closed)
            // A chunked one (no length declared) is read to its end, discarded, and refused the same.
            let chunked = try await step("the chunked body's 429") {
                try await blocking {
                    let connection = try RawConnection(port: port)
                    try connection.send("POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                    try connection.send("258\r\n\(String(repeating: "c", count: 600))\r\n0\r\n\r\n")
                    return try connection.readResponse()
                }
            }
            #expect(chunked.status == 429)
            #expect(server.bodyBytesInFlight == 1000)

            // Another address has its own share.
            let other = try RawConnection(port: port, source: "127.0.0.2")
            try await blocking {
                try other.send("POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n\(body)")
            }
            #expect(await eventually { held.value.count == 2 })
            #expect(server.bodyBytesInFlight == 2000)

            // Once the first is answered, 127.0.0.1's share has room again.
            #expect(try #require(held.value["/first"]).respond(HTTPResponse(body: "ok")))
            #expect(
                try await step("the first body's answer") { try await blocking { try first.readResponse() } }.status
                    == 200)
            #expect(await eventually { server.bodyBytesInFlight == 1000 })
            try await blocking {
                try first.send("POST /again HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n\(body)")
            }
            #expect(await eventually { held.value.count == 3 })
            for path in ["/again", "/other"] {
                #expect(try #require(held.value[path]).respond(HTTPResponse(body: "ok")))
            }
            #expect(try await blocking { try first.readResponse() }.status == 200)
            #expect(try await blocking { try other.readResponse() }.status == 200)
            #expect(await eventually { server.bodyBytesInFlight == 0 })
        }
    }

    @Test(
        "out-of-range settings are refused at start",
        arguments: [
            { (c: inout HTTPServerConfiguration) in c.headerTimeout = .zero },
            { c in c.minimumBodyRate = (bytes: 0, per: .seconds(1)) },
            { c in c.minimumBodyRate = (bytes: 1, per: .zero) },
            { c in c.maxConnectionsPerAddress = 0 },
            { c in c.maxBodyBytesPerAddress = c.maxBodySize - 1 },
        ] as [@Sendable (inout HTTPServerConfiguration) -> Void])
    func invalidSettings(adjust: @Sendable (inout HTTPServerConfiguration) -> Void) {
        let server = HTTPServer(
            configuration: testConfiguration(adjust), logger: quietLogger, handler: staticHandler(""))
        #expect(throws: HTTPServerError.self) { try server.start() }
    }
}
