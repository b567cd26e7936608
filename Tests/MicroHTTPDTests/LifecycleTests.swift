import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

@Suite("Limits and shutdown", .serialized, .timeLimit(.minutes(5)))
struct LifecycleTests {
    @Test("connections over the limit get 503 with Connection: close")
    func connectionLimit() async throws {
        let configuration = testConfiguration {
            $0.connectionLimit = 2
            $0.connectionLimitHeadroom = 8
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: staticHandler("ok")) {
            server in
            let port = try #require(server.port)
            let (held, over) = try await blocking {
                var held: [RawConnection] = []
                for _ in 0..<2 {
                    let connection = try RawConnection(port: port)
                    try connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    guard try connection.readResponse().status == 200 else { throw TestFailure("expected 200") }
                    held.append(connection)
                }
                let third = try RawConnection(port: port)
                try third.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try third.readResponse()
                return (held, (response, third.waitForClose()))
            }
            #expect(over.0.status == 503)
            #expect(over.0.header("Connection")?.lowercased() == "close")
            #expect(over.1, "the over-limit connection is closed")
            held.forEach { $0.close() }
            #expect(await eventually { server.activeConnectionCount == 0 })
            let after = try await blocking { try RawConnection.get("/", port: port) }
            #expect(after.status == 200)
        }
    }

    @Test("oversized header and URL get 431 and 414 from libmicrohttpd")
    func headerAndURLLimits() async throws {
        let configuration = testConfiguration { $0.connectionMemoryLimit = 8192 }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: staticHandler("ok")) {
            server in
            let port = try #require(server.port)
            let (bigHeader, bigURL, fine) = try await blocking {
                let big = String(repeating: "h", count: 9000)
                return (
                    try RawConnection.get("/", port: port, headers: "X-Big: \(big)\r\n"),
                    try RawConnection.get("/\(big)", port: port),
                    try RawConnection.get("/", port: port, headers: "X-Ok: \(String(repeating: "h", count: 3000))\r\n")
                )
            }
            #expect(bigHeader.status == 431)
            #expect(bigURL.status == 414)
            #expect(fine.status == 200)
        }
    }

    @Test("idle keep-alive connections time out; suspended streams are exempt")
    func idleTimeout() async throws {
        let collector = WriterCollector()
        let handler: HTTPHandler = { request, responder in
            if request.path == "/events" {
                collector.handler(request, responder)
            } else {
                responder.respond(HTTPResponse(body: "ok"))
            }
        }
        let configuration = testConfiguration { $0.idleTimeoutSeconds = 1 }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: handler) { server in
            let port = try #require(server.port)
            // The stream goes idle first, so each connection the timeout closes afterwards was idle for less time.
            let stream = try RawConnection(port: port)
            try await blocking {
                try stream.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try stream.readHead()
                _ = try stream.readChunk()
            }
            // Opens a keep-alive connection, makes one request and waits for the timeout to close it.
            func idleConnectionClosed() async throws -> (closed: Bool, after: Duration) {
                let idle = try RawConnection(port: port, receiveTimeoutSeconds: 30)
                return try await blocking {
                    try idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    _ = try idle.readResponse()
                    // Real time: libmicrohttpd's connection timeout runs on its own real clock; only generous bounds are checked.
                    let start = ContinuousClock.now
                    return (idle.waitForClose(), ContinuousClock.now - start)
                }
            }
            let first = try await idleConnectionClosed()
            #expect(first.closed, "the idle connection is closed by the timeout")
            // Generous: on half a core the whole suite can hold libmicrohttpd's threads for seconds.
            #expect(first.after < .seconds(30))
            // A second one, opened once the first was closed: by the time the timeout closes it, the stream has been
            // idle for two timeouts, whichever worker thread serves it.
            #expect(try await idleConnectionClosed().closed)
            let writer = try #require(collector.writers.value.first)
            #expect(writer.write("data: still here\n\n"))
            #expect(try await blocking { try stream.readChunk() } == Array("data: still here\n\n".utf8))
        }
    }

    @Test("shutdown ends open streams with the terminating chunk")
    func shutdownEndsStreams() async throws {
        let collector = WriterCollector()
        let server = HTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler)
        try server.start()
        let port = try #require(server.port)
        let connections = try await blocking {
            try (0..<3).map { _ in
                let connection = try RawConnection(port: port)
                try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try connection.readHead()
                _ = try connection.readChunk()
                return connection
            }
        }
        collector.writers.value[0].write("data: pending\n\n")
        async let stopped: Void = server.shutdown()
        let endings = try await blocking {
            try connections.map { connection -> [[UInt8]?] in
                var chunks: [[UInt8]?] = []
                while true {
                    let chunk = try connection.readChunk()
                    chunks.append(chunk)
                    if chunk == nil { return chunks }
                }
            }
        }
        await stopped
        // Each client sees the terminating chunk (and stream 0 its pending event first).
        #expect(endings[0] == [Array("data: pending\n\n".utf8), nil])
        #expect(endings[1] == [nil])
        #expect(endings[2] == [nil])
        #expect(collector.reasons.value == [.serverShutdown, .serverShutdown, .serverShutdown])
        #expect(server.activeStreamCount == 0)
    }

    @Test("shutdown answers a pending deferred request with 503")
    func shutdownAnswersDeferred() async throws {
        let held = Box<HTTPResponder?>(nil)
        let server = HTTPServer(configuration: testConfiguration(), logger: quietLogger) { _, responder in
            held.set(responder)  // never answered by the handler
        }
        try server.start()
        let port = try #require(server.port)
        let connection = try RawConnection(port: port)
        try await blocking { try connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n") }
        #expect(await eventually { held.value != nil })
        async let stopped: Void = server.shutdown()
        let response = try await blocking { try connection.readResponse() }
        await stopped
        #expect(response.status == 503)
        #expect(held.value?.respond(HTTPResponse(body: "too late")) == false)
    }

    @Test("shutdown lets a pending POST finish within the grace period, and refuses requests that come after it")
    func shutdownFinishesPendingChanges() async throws {
        let held = Box<HTTPResponder?>(nil)
        let calls = Box(0)
        let server = HTTPServer(configuration: testConfiguration(), logger: quietLogger) { request, responder in
            calls.update { $0 += 1 }
            if request.method == "POST" { held.set(responder) } else { responder.respond(HTTPResponse(body: "ok")) }
        }
        try server.start()
        let port = try #require(server.port)
        let posting = try RawConnection(port: port)
        let other = try RawConnection(port: port)
        try await blocking {
            try posting.send("POST /change HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            try other.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try other.readResponse()
        }
        #expect(await eventually { held.value != nil })
        async let stopped: Void = server.shutdown()
        #expect(await eventually { server.isShuttingDown })
        // A request on a connection that was open before: refused without its handler (it may go elsewhere).
        let refused = try await blocking {
            try other.send("GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
            return try other.readResponse()
        }
        #expect(refused.status == 503)
        #expect(calls.value == 2)
        // A new connection is refused at once, not left waiting in the listen queue.
        #expect(await eventually { (try? await blocking { try RawConnection(port: port) }) == nil })
        // The pending POST still gets its own answer.
        #expect(held.value?.respond(HTTPResponse(body: "done")) == true)
        let answer = try await blocking { try posting.readResponse() }
        await stopped
        #expect(answer.status == 200)
        #expect(answer.text == "done")
    }

    @Test("a POST still unanswered when the grace period ends gets 502: its outcome is unknown")
    func shutdownDeadlineAnswersPendingChanges() async throws {
        let held = Box<HTTPResponder?>(nil)
        let configuration = testConfiguration { $0.shutdownGracePeriod = .milliseconds(200) }
        let server = HTTPServer(configuration: configuration, logger: quietLogger) { _, responder in
            held.set(responder)
        }
        try server.start()
        let port = try #require(server.port)
        let connection = try RawConnection(port: port)
        try await blocking { try connection.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") }
        #expect(await eventually { held.value != nil })
        async let stopped: Void = server.shutdown()
        let response = try await blocking { try connection.readResponse() }
        await stopped
        #expect(response.status == 502)
        #expect(held.value?.respond(HTTPResponse(body: "too late")) == false)
    }

    @Test("shutdown is idempotent, also concurrently and before start")
    func idempotentShutdown() async throws {
        let neverStarted = HTTPServer(logger: quietLogger, handler: staticHandler(""))
        await neverStarted.shutdown()
        await neverStarted.shutdown()
        #expect(throws: HTTPServerError.self) { try neverStarted.start() }

        let server = HTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: staticHandler("ok"))
        try server.start()
        let port = try #require(server.port)
        #expect(try await blocking { try RawConnection.get("/", port: port) }.status == 200)
        async let first: Void = server.shutdown()
        async let second: Void = server.shutdown()
        _ = await (first, second)
        await server.shutdown()
        #expect(throws: (any Error).self) { try RawConnection.get("/", port: port) }
    }

    @Test("run() returns after a graceful shutdown when its task is cancelled")
    func runUntilCancelled() async throws {
        let server = HTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: staticHandler("ok"))
        let task = Task { try await server.run() }
        #expect(await eventually { server.port != nil })
        let port = try #require(server.port)
        #expect(try await blocking { try RawConnection.get("/", port: port) }.status == 200)
        task.cancel()
        try await task.value
        #expect(throws: (any Error).self) { try RawConnection.get("/", port: port) }
    }
}

@Suite("Exchange state machine", .timeLimit(.minutes(5)))
struct ExchangeStateMachineTests {
    @Test func answerDuringHandlerIsQueuedOnReturn() {
        var machine = ExchangeStateMachine()
        #expect(machine.provide(.response(HTTPResponse(status: 204))) == .stored)
        #expect(machine.provide(.response(HTTPResponse())) == .rejected)
        guard case .queue(.response(let response), endStream: false) = machine.handlerReturned() else {
            Issue.record("expected queue")
            return
        }
        #expect(response.status == 204)
    }

    @Test func laterAnswerResumesOnce() {
        var machine = ExchangeStateMachine()
        guard case .suspend = machine.handlerReturned() else {
            Issue.record("expected suspend")
            return
        }
        #expect(machine.provide(.response(HTTPResponse())) == .resume)
        #expect(machine.provide(.response(HTTPResponse())) == .rejected)
        guard case .queue(.response, _) = machine.calledAfterResume() else {
            Issue.record("expected queue")
            return
        }
        #expect(machine.completed() == nil)
        #expect(machine.provide(.response(HTTPResponse())) == .rejected)
    }

    @Test func aHangUpWhileWaitingAbandonsTheRequestOnce() {
        var machine = ExchangeStateMachine()
        guard case .suspend = machine.handlerReturned() else {
            Issue.record("expected suspend")
            return
        }
        let told = Box(0)
        #expect(machine.onAbandon { told.update { $0 += 1 } })
        guard case .resume(let onAbandon?) = machine.peerHungUp() else {
            Issue.record("expected a resume that tells the handler")
            return
        }
        onAbandon()
        #expect(told.value == 1)
        guard case .none = machine.peerHungUp() else {
            Issue.record("a second report must do nothing")
            return
        }
        #expect(machine.provide(.response(HTTPResponse())) == .rejected, "a late answer is refused")
        guard case .close(nil) = machine.calledAfterResume() else {
            Issue.record("the resumed connection must be closed without an answer")
            return
        }
        guard case .none = machine.shutdown() else {
            Issue.record("shutdown has nothing left to do")
            return
        }
        #expect(machine.completed() == nil)
        #expect(!machine.onAbandon {}, "asking after the fact: the caller runs the handler itself")
    }

    @Test func anAnswerDropsTheAbandonHandler() {
        var machine = ExchangeStateMachine()
        _ = machine.handlerReturned()
        let told = Box(0)
        _ = machine.onAbandon { told.update { $0 += 1 } }
        #expect(machine.provide(.response(HTTPResponse())) == .resume)
        guard case .none = machine.peerHungUp() else {
            Issue.record("an answered request has nothing to abandon")
            return
        }
        #expect(machine.onAbandon { told.update { $0 += 1 } }, "not kept, not called")
        #expect(told.value == 0)
    }

    @Test func aHangUpBeforeTheHandlerReturnsClosesInsteadOfSuspending() {
        var machine = ExchangeStateMachine()
        let told = Box(0)
        _ = machine.onAbandon { told.update { $0 += 1 } }
        guard case .none = machine.peerHungUp() else {
            Issue.record("nothing to resume while the handler runs")
            return
        }
        guard case .close(let onAbandon?) = machine.handlerReturned() else {
            Issue.record("expected close with the abandon handler")
            return
        }
        onAbandon()
        #expect(told.value == 1)
    }

    @Test func aHangUpOnAStreamAbortsItsWriterAndLeavesAnswersAlone() {
        var streaming = ExchangeStateMachine()
        // Never touched: an aborted stream's writer is resumed only if its own state says it is suspended.
        let writer = HTTPStreamWriter(connection: ConnectionHandle(raw: OpaquePointer(bitPattern: 1)!))
        _ = streaming.provide(.stream(status: 200, headers: HTTPHeaders(), writer: writer))
        _ = streaming.handlerReturned()
        guard case .abortStream(let aborted) = streaming.peerHungUp() else {
            Issue.record("expected the stream's writer to abort")
            return
        }
        #expect(aborted === writer)

        var answered = ExchangeStateMachine()
        _ = answered.provide(.response(HTTPResponse()))
        _ = answered.handlerReturned()
        guard case .none = answered.peerHungUp() else {
            Issue.record("a queued response goes out (or fails) as it is")
            return
        }
    }

    @Test func shutdownResolvesSuspendedWith503AndPreventsSuspension() {
        var suspended = ExchangeStateMachine()
        _ = suspended.handlerReturned()
        guard case .resume = suspended.shutdown() else {
            Issue.record("expected resume")
            return
        }
        guard case .queue(.rejection(let rejection), _) = suspended.calledAfterResume() else {
            Issue.record("expected a rejection")
            return
        }
        #expect(rejection == .shuttingDown)

        var handling = ExchangeStateMachine()
        guard case .none = handling.shutdown() else {
            Issue.record("expected no action while the handler runs")
            return
        }
        guard case .queue(.rejection(.shuttingDown), _) = handling.handlerReturned() else {
            Issue.record("a request must not suspend once shutdown started")
            return
        }
    }

    /// A request that may change something (a mutation, say) has run its handler: refusing it at shutdown would say
    /// it did nothing when it may have. It keeps waiting for its answer until the shutdown's deadline.
    @Test func shutdownLetsAPendingChangeFinishUntilItsDeadline() {
        var waiting = ExchangeStateMachine()
        waiting.finishesBeforeShutdown = true
        _ = waiting.handlerReturned()
        guard case .none = waiting.shutdown() else {
            Issue.record("a pending change keeps waiting when shutdown begins")
            return
        }
        #expect(waiting.provide(.response(HTTPResponse(body: "done"))) == .resume)
        guard case .queue(.response(let response), _) = waiting.calledAfterResume() else {
            Issue.record("its answer goes out during shutdown")
            return
        }
        #expect(response.body == Array("done".utf8))

        var late = ExchangeStateMachine()
        late.finishesBeforeShutdown = true
        _ = late.handlerReturned()
        _ = late.shutdown()
        guard case .resume = late.shutdownDeadlineReached() else {
            Issue.record("at the deadline a pending change is answered")
            return
        }
        guard case .queue(.rejection(let rejection), _) = late.calledAfterResume() else {
            Issue.record("expected a rejection")
            return
        }
        #expect(rejection == .unansweredAtShutdown)
        #expect(rejection.status == 502)
        #expect(late.provide(.response(HTTPResponse())) == .rejected)

        // A change whose handler returns after shutdown began still waits; after the deadline it cannot.
        var started = ExchangeStateMachine()
        started.finishesBeforeShutdown = true
        _ = started.shutdown()
        guard case .suspend = started.handlerReturned() else {
            Issue.record("a change whose handler ran waits for its answer during shutdown")
            return
        }
        var tooLate = ExchangeStateMachine()
        tooLate.finishesBeforeShutdown = true
        _ = tooLate.shutdownDeadlineReached()
        guard case .queue(.rejection(.unansweredAtShutdown), _) = tooLate.handlerReturned() else {
            Issue.record("after the deadline nothing waits")
            return
        }
    }

    /// A stream whose client reads too slowly to take even its end may still hold its connection suspended when the
    /// grace period ends; libmicrohttpd must not be stopped so. At the deadline it is closed as a hang-up is.
    @Test func theShutdownDeadlineClosesAStreamStillOpen() {
        var streaming = ExchangeStateMachine()
        // Never touched: the test only reads which writer the action names.
        let writer = HTTPStreamWriter(connection: ConnectionHandle(raw: OpaquePointer(bitPattern: 1)!))
        _ = streaming.provide(.stream(status: 200, headers: HTTPHeaders(), writer: writer))
        _ = streaming.handlerReturned()
        guard case .finishStream(let finished) = streaming.shutdown() else {
            Issue.record("shutdown ends the stream")
            return
        }
        #expect(finished === writer)
        guard case .abortStream(let aborted) = streaming.shutdownDeadlineReached() else {
            Issue.record("at the deadline a stream still open is closed")
            return
        }
        #expect(aborted === writer)
    }
}
