import ConvexValues
import Synchronization
import Testing

@testable import ConvexGateway

/// The stream wire as a state machine: deliveries in, writes out, no output at all.
@Suite struct StreamWireTests {
    let make = EventStreamTests()

    func text(_ write: StreamWire.Write) -> String {
        switch write {
        case .write(let bytes), .writeCoalescing(let bytes, _), .replacePending(let bytes):
            String(decoding: bytes, as: UTF8.self)
        case .end: "<end>"
        }
    }

    @Test func aFunctionStreamWritesTheSharedEventAndDropsAnOlderResult() {
        var wire = StreamWire(framing: .function, count: 1, limit: 100, patches: false, resumeFrom: nil)
        let new = make.update("new", hash: 2)
        #expect(
            wire.deliver(make.transition(2, (0, new)), pendingBytes: { fatalError("not read") }) == [
                .writeCoalescing(Array("id: 2-2\ndata: \"new\"\n\n".utf8), limit: 100)
            ])
        // Framed once: another stream of the same update writes the same bytes, made by the first.
        var other = StreamWire(framing: .function, count: 1, limit: 100, patches: false, resumeFrom: nil)
        #expect(new.frame.bytes { fatalError("framed again") } == Array("id: 2-2\ndata: \"new\"\n\n".utf8))
        #expect(other.deliver(make.transition(2, (0, new)), pendingBytes: { 0 }).count == 1)
        #expect(wire.deliver(make.transition(1, (0, make.update("old", hash: 1))), pendingBytes: { 0 }).isEmpty)
    }

    @Test func refusedCredentialsWriteOneFatalEventThenTheEndAndNothingAfter() {
        var wire = StreamWire(framing: .transitions(ids: ["a"]), count: 1, limit: 100, patches: false, resumeFrom: nil)
        let expired = make.failure(.unauthenticated("Convex token identity expired"), hash: 9)
        let writes = wire.deliver(make.transition(1, (0, expired)), pendingBytes: { 0 })
        #expect(writes.count == 2)
        #expect(text(writes[0]).hasPrefix("event: fatal\ndata: {\"error\":{\"code\":\"Unauthenticated\""))
        #expect(writes.last == .end)
        #expect(wire.deliver(make.transition(2, (0, make.update(1.0, hash: 3))), pendingBytes: { 0 }).isEmpty)
        #expect(wire.end().isEmpty, "ended once")
    }

    @Test func aReaderBehindTheLimitGetsEverySubscriptionsLatestInsteadOfTheQueue() {
        var wire = StreamWire(
            framing: .transitions(ids: ["a", "b"]), count: 2, limit: 100, patches: false, resumeFrom: nil)
        let first = wire.deliver(
            make.transition(1, (0, make.update("a1", hash: 1)), (1, make.update("b1", hash: 2))), pendingBytes: { 0 })
        #expect(first.count == 1)
        #expect(
            text(first[0]).contains(#""changes":[{"sub":"a","value":"a1","v":"1"},{"sub":"b","value":"b1","v":"2"}]"#))
        let behind = wire.deliver(make.transition(2, (1, make.update("b2", hash: 3))), pendingBytes: { 100 })
        guard case .replacePending = behind.first else {
            Issue.record("expected a replacement of the queue, got \(behind)")
            return
        }
        #expect(
            text(behind[0]).contains(#""changes":[{"sub":"a","value":"a1","v":"1"},{"sub":"b","value":"b2","v":"3"}]"#))
        #expect(text(behind[0]).contains("id: 3-1.3"))
    }

    /// A delivery that arrives while the stream performs an earlier one's writes (here: from inside a write) is
    /// written after it, in order; the writes happen outside the stream's lock, or this would deadlock.
    @Test func aDeliveryDuringAWriteIsWrittenAfterIt() throws {
        final class ReenteringOutput: EventStreamOutput {
            let recorded = RecordingOutput()
            let onFirstWrite = Mutex<(@Sendable () -> Void)?>(nil)
            func write(_ bytes: [UInt8]) {
                recorded.write(bytes)
                onFirstWrite.withLock { action in
                    defer { action = nil }; return action
                }?()
            }
            var pendingByteCount: Int { 0 }
            func replacePending(with bytes: [UInt8]) { recorded.replacePending(with: bytes) }
            func end() { recorded.end() }
        }
        let output = ReenteringOutput()
        let stream = make.stream(["a"], output)
        let second = make.transition(2, (0, make.update("second", hash: 2)))
        output.onFirstWrite.withLock { $0 = { stream.deliver(second) } }
        stream.deliver(make.transition(1, (0, make.update("first", hash: 1))))
        let values = try output.recorded.events.map { try make.json($0.data)["changes"]?[0]?["value"] }
        #expect(values == ["first", "second"])
    }
}
