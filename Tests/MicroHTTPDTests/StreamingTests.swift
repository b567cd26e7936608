import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

/// Collects the stream writers the handler starts, in order.
final class WriterCollector: Sendable {
    let writers = Box<[HTTPStreamWriter]>([])
    let reasons = Box<[HTTPStreamCloseReason]>([])

    var handler: HTTPHandler {
        { [self] _, responder in
            guard
                let writer = responder.startStream(
                    headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-store"]
                )
            else { return }
            writer.onClose { reason in self.reasons.update { $0.append(reason) } }
            writer.write(": connected\n\n")
            writers.update { $0.append(writer) }
        }
    }
}

@Suite("Streaming responses", .serialized, .timeLimit(.minutes(5)))
struct StreamingTests {
    /// Opens `GET /events` over HTTP/1.1 and reads its head and first chunk: the connection and the stream's writer.
    private func openStream(on server: HTTPServer, _ collector: WriterCollector) async throws -> (
        RawConnection, HTTPStreamWriter
    ) {
        let port = try #require(server.port)
        let connection = try RawConnection(port: port)
        _ = try await blocking {
            try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try connection.readHead()
            return try connection.readChunk()
        }
        return (connection, try #require(collector.writers.value.first))
    }

    @Test("events arrive one at a time, then the terminating chunk")
    func incrementalDelivery() async throws {
        let collector = WriterCollector()
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port)
            let head = try await blocking {
                try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                return try connection.readHead()
            }
            #expect(head.status == 200)
            #expect(head.header("Transfer-Encoding") == "chunked")
            #expect(head.header("Content-Type") == "text/event-stream")
            #expect(try await blocking { try connection.readChunk() } == Array(": connected\n\n".utf8))
            let writer = try #require(collector.writers.value.first)
            for index in 1...3 {
                // The next event is written only after the previous one was received: nothing is buffered.
                #expect(writer.write("data: \(index)\n\n"))
                let chunk = try await blocking { try connection.readChunk() }
                #expect(chunk == Array("data: \(index)\n\n".utf8))
            }
            writer.end()
            #expect(writer.write("late") == false)
            #expect(try await blocking { try connection.readChunk() } == nil)
            #expect(await writer.closed() == .finished)
            #expect(collector.reasons.value == [.finished])
            #expect(await eventually { server.activeStreamCount == 0 })
            // The connection stays usable after the stream ended.
            let next = try await blocking {
                try connection.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
                return try connection.readHead()
            }
            #expect(next.status == 200)
        }
    }

    @Test("an idle stream is suspended: the content reader is not called again")
    func idleStreamIsNotPolled() async throws {
        let collector = WriterCollector()
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let (connection, writer) = try await openStream(on: server, collector)
            // Settled: at least the call that delivered the first event and the one that suspended, and no call
            // between two polls.
            var previous = -1
            #expect(
                await eventually {
                    let calls = writer.readerCalls.load(ordering: .relaxed)
                    defer { previous = calls }
                    return calls >= 2 && calls == previous
                })
            let settled = writer.readerCalls.load(ordering: .relaxed)
            // Real time: that libmicrohttpd's thread does not call the reader is seen only over a window (a busy-looping
            // reader would be called millions of times in half a second); no event marks a call that does not happen.
            try await Task.sleep(for: .milliseconds(500))
            #expect(writer.readerCalls.load(ordering: .relaxed) == settled)
            writer.write("data: wake\n\n")
            #expect(try await blocking { try connection.readChunk() } == Array("data: wake\n\n".utf8))
        }
    }

    @Test("a write to an idle HTTP/1.1 stream goes to its socket without waking libmicrohttpd's thread")
    func idleStreamIsWrittenDirectly() async throws {
        let collector = WriterCollector()
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let (connection, writer) = try await openStream(on: server, collector)
            #expect(await eventually { writer.suspendedIdle })
            let calls = writer.readerCalls.load(ordering: .relaxed)
            for index in 1...3 {
                #expect(writer.write("data: \(index)\n\n"))
                #expect(try await blocking { try connection.readChunk() } == Array("data: \(index)\n\n".utf8))
            }
            #expect(writer.readerCalls.load(ordering: .relaxed) == calls, "no content-reader call: sent directly")
            writer.end()
            #expect(try await blocking { try connection.readChunk() } == nil)
            #expect(await writer.closed() == .finished)
        }
    }

    @Test("an HTTP/1.0 stream (no chunks) is always written by libmicrohttpd")
    func http10StreamIsNotWrittenDirectly() async throws {
        let collector = WriterCollector()
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port)
            let head = try await blocking {
                try connection.send("GET /events HTTP/1.0\r\n\r\n")
                return try connection.readHead()
            }
            #expect(head.header("Transfer-Encoding") == nil)
            #expect(try await blocking { try connection.readBytes(13) } == Array(": connected\n\n".utf8))
            let writer = try #require(collector.writers.value.first)
            #expect(await eventually { writer.suspendedIdle })
            #expect(writer.write("data: 1\n\n"))
            // The body is close-delimited: the bytes come as written, with no chunk framing around them.
            #expect(try await blocking { try connection.readBytes(9) } == Array("data: 1\n\n".utf8))
            writer.end()
            #expect(await writer.closed() == .finished)
        }
    }

    @Test("500 streams all receive a broadcast")
    func broadcastToManyStreams() async throws {
        let collector = WriterCollector()
        let count = 500
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let port = try #require(server.port)
            let connections = try await blocking {
                var connections: [RawConnection] = []
                for _ in 0..<count {
                    let connection = try RawConnection(port: port)
                    try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                    connections.append(connection)
                }
                for connection in connections {
                    guard try connection.readHead().status == 200, try connection.readChunk() != nil else {
                        throw TestFailure("stream did not start")
                    }
                }
                return connections
            }
            #expect(collector.writers.value.count == count)
            #expect(server.activeStreamCount == count)
            for writer in collector.writers.value {
                #expect(writer.write("event: update\ndata: {\"v\":1}\n\n"))
            }
            let received = try await blocking {
                try connections.map { try $0.readChunk() }
            }
            #expect(received.allSatisfy { $0 == Array("event: update\ndata: {\"v\":1}\n\n".utf8) })
        }
    }

    @Test("concurrent writers on one stream lose no bytes and no wake-ups")
    func concurrentWriters() async throws {
        let collector = WriterCollector()
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let (connection, writer) = try await openStream(on: server, collector)
            let writers = 8
            let messages = 300
            let message = Array("data: 0123456789\n\n".utf8)
            async let received: Int = blocking {
                var total = 0
                while total < writers * messages * message.count {
                    guard let chunk = try connection.readChunk() else { break }
                    total += chunk.count
                }
                return total
            }
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<writers {
                    group.addTask {
                        for index in 0..<messages {
                            writer.write(message)
                            // Now and then until the stream has drained, so later writes wake a suspended stream.
                            if index % 50 == 0 { #expect(await eventually { writer.pendingByteCount == 0 }) }
                        }
                    }
                }
            }
            #expect(try await received == writers * messages * message.count)
            writer.end()
            #expect(try await blocking { try connection.readChunk() } == nil)
        }
    }

    @Test("a client that went away while writes go on is noticed")
    func clientDisconnect() async throws {
        let collector = WriterCollector()
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: collector.handler) {
            server in
            let port = try #require(server.port)
            try await blocking {
                let connection = try RawConnection(port: port)
                try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try connection.readHead()
                _ = try connection.readChunk()
                connection.close()
            }
            let writer = try #require(collector.writers.value.first)
            var writes = 0
            while !writer.isClosed && writes < 200 {
                writer.write(": heartbeat\n\n")
                writes += 1
                // Each write is handed to libmicrohttpd (or refused) before the next one.
                #expect(await eventually { writer.isClosed || writer.pendingByteCount == 0 })
            }
            #expect(writer.isClosed, "the disconnect should be noticed within 200 writes")
            #expect(await writer.closed() == .clientDisconnected)
            #expect(await eventually { server.activeStreamCount == 0 })
        }
    }

    @Test("a stream can be started later from a Task, and replacePending coalesces")
    func deferredStreamAndCoalescing() async throws {
        let responderBox = Box<HTTPResponder?>(nil)
        // The handler keeps the responder and returns: the stream is started later, by the test's task.
        let handler: HTTPHandler = { _, responder in responderBox.set(responder) }
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: handler) { server in
            let port = try #require(server.port)
            let connection = try RawConnection(port: port)
            try await blocking { try connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n") }
            #expect(await eventually { responderBox.value != nil })
            let responder = try #require(responderBox.value)
            let writer = try #require(responder.startStream(headers: ["Content-Type": "text/event-stream"]))
            // The libmicrohttpd thread may take a write as soon as the stream starts, so which of these go out is a
            // race; the buffer's coalescing itself is tested without I/O in StreamBufferTests.
            writer.write("data: 1\n\n")
            writer.replacePending(with: Array("data: 2\n\n".utf8))
            writer.replacePending(with: Array("data: 3\n\n".utf8))
            let (head, received) = try await blocking {
                let head = try connection.readHead()
                var received = ""
                while !received.hasSuffix("data: 3\n\n"), let chunk = try connection.readChunk() {
                    received += String(decoding: chunk, as: UTF8.self)
                }
                return (head, received)
            }
            #expect(head.status == 200)
            // Whatever went out before a replacement, the stream is in order, whole events only, ending with the latest.
            #expect(
                [
                    "data: 3\n\n", "data: 1\n\ndata: 3\n\n", "data: 2\n\ndata: 3\n\n",
                    "data: 1\n\ndata: 2\n\ndata: 3\n\n",
                ].contains(received))
            #expect(writer.pendingByteCount == 0)
            writer.end()
            #expect(try await blocking { try connection.readChunk() } == nil)
        }
    }
}

@Suite("Stream buffer state machine", .timeLimit(.minutes(5)))
struct StreamBufferTests {
    /// A suspended stream whose socket may be written (an HTTP/1.1 chunked stream).
    private func idleDirectBuffer() -> StreamBuffer {
        var buffer = StreamBuffer()
        buffer.directSocket = 7
        var storage = [UInt8](repeating: 0, count: 8)
        _ = storage.withUnsafeMutableBytes { buffer.read(into: $0) }
        return buffer
    }

    @Test func anIdleChunkedStreamIsWrittenDirectlyAndStaysSuspended() {
        var buffer = idleDirectBuffer()
        let event: [UInt8] = Array("data: 1\n\n".utf8)
        #expect(buffer.write(event) == .sendDirectly)
        let chunk = StreamBuffer.chunk(event)
        #expect(chunk == Array("9\r\ndata: 1\n\n\r\n".utf8))
        #expect(buffer.sentDirectly(event, sent: chunk.count, of: chunk.count) == .accepted)
        #expect(buffer.isSuspended, "libmicrohttpd was not woken")
        #expect(buffer.pendingByteCount == 0)
        #expect(buffer.write(event) == .sendDirectly, "the next write goes the same way")
    }

    @Test func aStreamWithoutADirectSocketIsResumedAsBefore() {
        var buffer = StreamBuffer()
        var storage = [UInt8](repeating: 0, count: 8)
        _ = storage.withUnsafeMutableBytes { buffer.read(into: $0) }
        #expect(buffer.write([1]) == .acceptedResume)
    }

    @Test func theRestOfAChunkGoesOutBeforeAnythingLibmicrohttpdFrames() {
        var buffer = idleDirectBuffer()
        let event: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let chunk = StreamBuffer.chunk(event)
        // The socket took three bytes: the rest waits for it, and the connection stays suspended.
        #expect(buffer.sentDirectly(event, sent: 3, of: chunk.count) == .accepted)
        #expect(buffer.remainderToSend == Array(chunk[3...]))
        #expect(buffer.pendingByteCount == chunk.count - 3)
        #expect(buffer.write([9]) == .accepted, "queued behind the rest, not resumed")
        #expect(buffer.finish() == .accepted, "not resumed either: its last chunk would land inside the rest")
        #expect(buffer.remainderSent(2) == .accepted)
        #expect(buffer.remainderToSend == Array(chunk[5...]))
        #expect(buffer.remainderSent(-Int(EAGAIN)) == .accepted)
        #expect(buffer.remainderSent(chunk.count - 5) == .acceptedResume, "all out: libmicrohttpd takes over")
        #expect(buffer.remainderToSend == nil)
        var storage = [UInt8](repeating: 0, count: 8)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .bytes(1))
        #expect(storage[0] == 9)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .endOfStream)
    }

    @Test func aChunkTheSocketRefusesIsQueuedForLibmicrohttpd() {
        var buffer = idleDirectBuffer()
        #expect(buffer.sentDirectly([1, 2], sent: -Int(EAGAIN), of: 7) == .acceptedResume)
        #expect(buffer.write([3]) == .accepted, "no direct write while bytes are queued")
        var storage = [UInt8](repeating: 0, count: 8)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .bytes(3))
        #expect(Array(storage[0..<3]) == [1, 2, 3])
    }

    @Test func aFailedSendOrAHangUpEndsTheStreamAndDropsTheRest() {
        var failed = idleDirectBuffer()
        #expect(failed.sentDirectly([1], sent: -Int(EPIPE), of: 6) == .acceptedResume)
        var storage = [UInt8](repeating: 0, count: 8)
        #expect(storage.withUnsafeMutableBytes { failed.read(into: $0) } == .abort)

        var hungUp = idleDirectBuffer()
        #expect(hungUp.sentDirectly([1, 2, 3], sent: 2, of: 8) == .accepted)
        #expect(hungUp.peerHungUp() == .acceptedResume, "a client that left is resumed even with a rest waiting")
        #expect(hungUp.remainderToSend == nil)
        #expect(storage.withUnsafeMutableBytes { hungUp.read(into: $0) } == .abort)
    }

    @Test func suspendsWhenEmptyAndResumesOnWrite() {
        var buffer = StreamBuffer()
        var storage = [UInt8](repeating: 0, count: 16)
        let action = storage.withUnsafeMutableBytes { buffer.read(into: $0) }
        #expect(action == .suspend)
        #expect(buffer.isSuspended)
        #expect(buffer.write([1, 2, 3]) == .acceptedResume)
        #expect(buffer.write([4]) == .accepted)
        let read = storage.withUnsafeMutableBytes { buffer.read(into: $0) }
        #expect(read == .bytes(4))
        #expect(Array(storage[0..<4]) == [1, 2, 3, 4])
    }

    @Test func splitsAcrossSmallBuffersAndKeepsPartialWriteOnReplace() {
        var buffer = StreamBuffer()
        _ = buffer.write(Array(repeating: 7, count: 10))
        _ = buffer.write([8, 8])
        var storage = [UInt8](repeating: 0, count: 4)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .bytes(4))
        let (action, dropped) = buffer.replacePending(with: [9])
        #expect(action == .accepted)
        #expect(dropped == 2, "only the unsent write is dropped; the partly sent one stays whole")
        #expect(buffer.pendingByteCount == 7)
        var rest = [UInt8](repeating: 0, count: 64)
        #expect(rest.withUnsafeMutableBytes { buffer.read(into: $0) } == .bytes(7))
        #expect(Array(rest[0..<7]) == [7, 7, 7, 7, 7, 7, 9])
    }

    @Test func aWriteCoalescesOnlyOnceTheLimitIsPending() {
        var buffer = StreamBuffer()
        #expect(buffer.write([1, 1], coalescingAt: 4) == .accepted)
        #expect(buffer.write([2, 2], coalescingAt: 4) == .accepted)
        // 4 bytes wait: the next write replaces them.
        #expect(buffer.write([3], coalescingAt: 4) == .accepted)
        #expect(buffer.pendingByteCount == 1)
        var storage = [UInt8](repeating: 0, count: 8)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .bytes(1))
        #expect(storage[0] == 3)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .suspend)
        #expect(buffer.write([4], coalescingAt: 4) == .acceptedResume)
    }

    @Test func finishDrainsThenEnds() {
        var buffer = StreamBuffer()
        _ = buffer.write([1])
        #expect(buffer.finish() == .accepted)
        #expect(buffer.write([2]) == .rejected)
        var storage = [UInt8](repeating: 0, count: 8)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .bytes(1))
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .endOfStream)
        #expect(buffer.close(.finished) == true)
        #expect(buffer.closeReason == .finished)
        #expect(buffer.close(.clientDisconnected) == false)
    }

    @Test func aHangUpResumesAnIdleStreamWhoseNextReadEndsIt() {
        var buffer = StreamBuffer()
        var storage = [UInt8](repeating: 0, count: 8)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .suspend)
        #expect(buffer.peerHungUp() == .acceptedResume)
        #expect(buffer.peerHungUp() == .rejected, "reported once")
        #expect(buffer.write([1]) == .rejected)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .abort)
    }

    @Test func aHangUpWhileBytesArePendingDropsThemAndEndsAtTheNextRead() {
        var buffer = StreamBuffer()
        _ = buffer.write([1, 2, 3])
        #expect(buffer.peerHungUp() == .accepted, "not suspended: nothing to resume")
        #expect(buffer.pendingByteCount == 0)
        var storage = [UInt8](repeating: 0, count: 8)
        #expect(storage.withUnsafeMutableBytes { buffer.read(into: $0) } == .abort)
        #expect(buffer.close(.clientDisconnected) == true)
        #expect(buffer.peerHungUp() == .rejected, "a closed stream is not resumed")
    }

    @Test func shutdownFinishIsReportedAsShutdown() {
        var buffer = StreamBuffer()
        var storage = [UInt8](repeating: 0, count: 8)
        _ = storage.withUnsafeMutableBytes { buffer.read(into: $0) }
        #expect(buffer.finish(byShutdown: true) == .acceptedResume)
        #expect(buffer.close(.finished) == true)
        #expect(buffer.closeReason == .serverShutdown)
    }
}
