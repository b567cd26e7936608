import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

/// A client that leaves while its stream is idle or its request waits is noticed by the hang-up watcher, with no
/// write to the connection: without it, nothing in these tests would ever end the requests.
@Suite("Clients that leave", .serialized, .timeLimit(.minutes(5)))
struct ClientDepartureTests {
    @Test("idle streams whose clients close end at once, with no write")
    func idleStreamsAreReleased() async throws {
        let collector = WriterCollector()
        let count = 50
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let port = try #require(server.port)
            let connections = try await blocking {
                try (0..<count).map { _ in
                    let connection = try RawConnection(port: port)
                    try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                    guard try connection.readHead().status == 200, try connection.readChunk() != nil else {
                        throw TestFailure("stream did not start")
                    }
                    return connection
                }
            }
            #expect(server.activeStreamCount == count)
            for connection in connections { connection.close() }
            #expect(await eventually { server.activeConnectionCount == 0 && server.activeStreamCount == 0 })
            #expect(collector.reasons.value == Array(repeating: .clientDisconnected, count: count))
            #expect(collector.writers.value.allSatisfy { !$0.write(": too late\n\n") })
        }
    }

    @Test("a waiting request whose client closes is abandoned: the handler is told, a late answer is refused")
    func waitingRequestIsAbandoned() async throws {
        let held = Box<[HTTPResponder]>([])
        let told = Box(0)
        let handler: HTTPHandler = { _, responder in
            responder.onClientGone { told.update { $0 += 1 } }
            held.update { $0.append(responder) }
        }
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: handler) { server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port)
            try await blocking { try connection.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n") }
            #expect(await eventually { held.value.count == 1 })
            connection.close()
            #expect(await eventually { told.value == 1 && server.activeConnectionCount == 0 })
            #expect(held.value.first?.respond(HTTPResponse(body: "late")) == false)
            #expect(told.value == 1, "told once")
        }
    }

    @Test("a request answered after a wait leaves its keep-alive connection open and unwatched")
    func keepAliveAfterAWait() async throws {
        // The handler keeps the responder and returns; the test answers once it holds it.
        let held = Box<[HTTPResponder]>([])
        let handler: HTTPHandler = { _, responder in held.update { $0.append(responder) } }
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: handler) { server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port)
            for request in 1...2 {
                try await blocking { try connection.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n") }
                #expect(await eventually { held.value.count == request })
                try #require(held.value.last).respond(HTTPResponse(body: "waited"))
                let response = try await blocking { try connection.readResponse() }
                #expect(response.text == "waited")
            }
            #expect(server.activeConnectionCount == 1)
        }
    }

    @Test("a slow reader that is still connected keeps its stream")
    func slowReaderIsNotDropped() async throws {
        let collector = WriterCollector()
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port, receiveTimeoutSeconds: 30)
            _ = try await blocking {
                try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try connection.readHead()
                return try connection.readChunk()
            }
            let writer = try #require(collector.writers.value.first)
            // Far more than the socket buffers hold: the server waits for the reader, which reads nothing for a while.
            let piece = Array(repeating: UInt8(ascii: "x"), count: 64 * 1024)
            let pieces = 128
            for _ in 0..<pieces { #expect(writer.write(piece)) }
            // Real time: the kernel's buffers must fill and stay full for a while, with no event to mark either.
            try await Task.sleep(for: .milliseconds(300))
            #expect(!writer.isClosed)
            #expect(writer.pendingByteCount > 0, "the reader has not kept up")
            let received = try await blocking {
                var received = 0
                while received < pieces * piece.count, let chunk = try connection.readChunk() {
                    received += chunk.count
                }
                return received
            }
            #expect(received == pieces * piece.count)
            writer.end()
            #expect(try await blocking { try connection.readChunk() } == nil)
            #expect(collector.reasons.value.isEmpty || collector.reasons.value == [.finished])
        }
    }
}
