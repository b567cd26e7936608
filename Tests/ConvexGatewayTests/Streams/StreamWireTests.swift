import ConvexValues
import Synchronization
import Testing

@testable import ConvexGateway

/// The stream wire as a state machine: deliveries in, writes out, no output at all.
@Suite struct StreamWireTests {
    let make = EventStreamTests()

    /// A write as text: its kind, and its event's bytes.
    func text(_ write: StreamWire.Write) -> String {
        switch write {
        case .write(let event): String(decoding: EventStream.bytes(of: event), as: UTF8.self)
        case .writeCoalescing(let event, let limit):
            "<coalescing at \(limit)>" + String(decoding: EventStream.bytes(of: event), as: UTF8.self)
        case .replacePending(let event): "<replacing>" + String(decoding: EventStream.bytes(of: event), as: UTF8.self)
        case .end: "<end>"
        }
    }

    func texts(_ writes: StreamWire.Writes) -> [String] { writes.map(text) }

    @Test func aFunctionStreamWritesTheSharedEventAndDropsAnOlderResult() {
        var wire = StreamWire(framing: .function, count: 1, limit: 100, patches: false, resumeFrom: nil)
        #expect(!wire.readsPendingBytes, "its output coalesces in one step")
        let new = make.update("new", hash: 2)
        let writes = wire.deliver(make.transition(2, (0, new)), pendingBytes: 0)
        guard writes.count == 1, case .writeCoalescing(.function(let update), limit: 100) = writes[0] else {
            Issue.record("expected the update's shared event, coalescing at the limit: \(texts(writes))")
            return
        }
        #expect(update.current.id == new.current.id)
        #expect(texts(writes) == ["<coalescing at 100>id: 2-2\ndata: \"new\"\n\n"])
        // Framed once: another stream of the same update writes the same bytes, made by the first.
        var other = StreamWire(framing: .function, count: 1, limit: 100, patches: false, resumeFrom: nil)
        #expect(new.event { fatalError("framed again") } == Array("id: 2-2\ndata: \"new\"\n\n".utf8))
        #expect(texts(other.deliver(make.transition(2, (0, new)), pendingBytes: 0)) == texts(writes))
        #expect(wire.deliver(make.transition(1, (0, make.update("old", hash: 1))), pendingBytes: 0).isEmpty)
    }

    @Test func onlyStreamsOfPatchesOrTransitionsReadHowFarBehindTheirClientIs() {
        #expect(!StreamWire(framing: .function, count: 1, limit: 1, patches: false, resumeFrom: nil).readsPendingBytes)
        #expect(StreamWire(framing: .function, count: 1, limit: 1, patches: true, resumeFrom: nil).readsPendingBytes)
        var wire = StreamWire(framing: .transitions(ids: ["a"]), count: 1, limit: 1, patches: false, resumeFrom: nil)
        #expect(wire.readsPendingBytes)
        _ = wire.end()
        #expect(!wire.readsPendingBytes, "an ended stream reads nothing")
    }

    @Test func refusedCredentialsWriteOneFatalEventThenTheEndAndNothingAfter() {
        var wire = StreamWire(framing: .transitions(ids: ["a"]), count: 1, limit: 100, patches: false, resumeFrom: nil)
        let expired = make.failure(.unauthenticated("Convex token identity expired"), hash: 9)
        let writes = wire.deliver(make.transition(1, (0, expired)), pendingBytes: 0)
        #expect(writes.count == 2)
        #expect(text(writes[0]).hasPrefix("event: fatal\ndata: {\"error\":{\"code\":\"Unauthenticated\""))
        #expect(text(writes[1]) == "<end>")
        #expect(wire.deliver(make.transition(2, (0, make.update(1.0, hash: 3))), pendingBytes: 0).isEmpty)
        #expect(wire.end().isEmpty, "ended once")
    }

    @Test func aReaderBehindTheLimitGetsEverySubscriptionsLatestInsteadOfTheQueue() {
        var wire = StreamWire(
            framing: .transitions(ids: ["a", "b"]), count: 2, limit: 100, patches: false, resumeFrom: nil)
        #expect(wire.deliver(.emptyStart, pendingBytes: 0).isEmpty)
        let first = wire.deliver(
            make.transition(1, (0, make.update("a1", hash: 1)), (1, make.update("b1", hash: 2))), pendingBytes: 0)
        #expect(first.count == 1)
        #expect(
            text(first[0]).contains(#""changes":[{"sub":"a","value":"a1","v":"1"},{"sub":"b","value":"b1","v":"2"}]"#))
        let behind = wire.deliver(make.transition(2, (1, make.update("b2", hash: 3))), pendingBytes: 100)
        guard case .replacePending = behind.first else {
            Issue.record("expected a replacement of the queue, got \(behind)")
            return
        }
        #expect(
            text(behind[0]).contains(#""changes":[{"sub":"a","value":"a1","v":"1"},{"sub":"b","value":"b2","v":"3"}]"#))
        #expect(text(behind[0]).contains("id: 3-1.3"))
    }

    /// Streams with the same subscription ids that hold the same results once they have a shared transition get the
    /// same event, made once; any difference (another id, another result held, patches) gets the stream its own, and
    /// every event is the one the stream would make alone.
    @Test func streamsThatEndUpHoldingTheSameGetOneSharedTransitionEvent() throws {
        func wire(_ ids: [String], patches: Bool = false) -> StreamWire {
            var wire = StreamWire(
                framing: .transitions(ids: ids), count: ids.count, limit: 1 << 20, patches: patches, resumeFrom: nil)
            _ = wire.deliver(.emptyStart, pendingBytes: 0)
            return wire
        }
        func bytes(_ writes: StreamWire.Writes) throws -> [UInt8] {
            guard writes.count == 1, case .write(let event) = writes[0] else {
                throw ExpectedOneWrite(writes: texts(writes))
            }
            return EventStream.bytes(of: event)
        }
        struct ExpectedOneWrite: Error { let writes: [String] }

        let change = make.transition(5, (0, make.update("new", hash: 5, version: 5)))
        let shared = TransitionEventCache()
        var sharedChange = change
        sharedChange.shared = shared
        // (ids, the result of the second subscription held before, patches)
        let streams: [([String], UInt64, Bool)] = [
            (["a", "b"], 2, false), (["a", "b"], 2, false), (["a", "c"], 2, false), (["a", "b"], 3, false),
            (["a", "b"], 2, true), (["a", "b"], 2, false),
        ]
        var made: [[UInt8]] = []
        for (ids, held, patches) in streams {
            var alone = wire(ids, patches: patches)
            var sharing = wire(ids, patches: patches)
            let holding = make.update("b", hash: ContentHash(value: held), version: ResultVersion(value: held))
            let before = make.transition(1, (1, holding))
            _ = alone.deliver(before, pendingBytes: 0)
            _ = sharing.deliver(before, pendingBytes: 0)
            let expected = try bytes(alone.deliver(change, pendingBytes: 0))
            let got = try bytes(sharing.deliver(sharedChange, pendingBytes: 0))
            #expect(String(decoding: got, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
            made.append(got)
        }
        #expect(shared.count == 3, "one event per distinct shape of a stream that reads values")
        func storage(_ bytes: [UInt8]) -> UnsafePointer<UInt8>? { bytes.withUnsafeBufferPointer { $0.baseAddress } }
        #expect(storage(made[0]) == storage(made[1]) && storage(made[0]) == storage(made[5]), "made once, shared")
        #expect(storage(made[0]) != storage(made[3]))
        #expect(String(decoding: made[3], as: UTF8.self).contains("id: 5-5.3\n"))
    }

    /// A shared transition that a stream already holds part of (its first delivery overtook it): the stream sends the
    /// newer changes alone, in an event of its own, never the event the streams that share the transition send (which
    /// holds the older results too), and leaves the shared event to them.
    @Test func aSharedTransitionPartlyOlderThanWhatTheStreamSentGoesOutAsItsOwnEventOfTheNewerChanges() throws {
        var wire = StreamWire(
            framing: .transitions(ids: ["a", "b"]), count: 2, limit: 1 << 20, patches: false, resumeFrom: nil)
        _ = wire.deliver(.emptyStart, pendingBytes: 0)
        _ = wire.deliver(make.transition(9, (0, make.update("a at 7", hash: 7))), pendingBytes: 0)
        let shared = TransitionEventCache()
        var transition = make.transition(
            8, (0, make.update("a at 6", hash: 6)), (1, make.update("b at 8", hash: 8)))
        transition.shared = shared
        let writes = wire.deliver(transition, pendingBytes: 0)
        guard writes.count == 1, case .write(.bytes(let bytes)) = writes[0] else {
            Issue.record("expected one event of the stream's own: \(texts(writes))")
            return
        }
        let data = try #require(
            String(decoding: bytes, as: UTF8.self).split(separator: "\n").last { $0.hasPrefix("data: ") })
        let changes = try make.json(String(data.dropFirst(6)))["changes"]
        #expect(changes == [["sub": "b", "value": "b at 8", "v": "8"]])
        #expect(shared.count == 0, "the shared event is left to the streams that send all of it")
        #expect(wire.deliver(transition, pendingBytes: 0).isEmpty, "nothing newer the second time")
    }

    /// A step's writes are taken out one by one, in order; what is left is still a collection of the rest.
    @Test func writesAreTakenOutInOrder() {
        var writes = StreamWire.Writes([.write(.bytes([1])), .replacePending(.bytes([2])), .end])
        #expect(writes.count == 3)
        guard case .write(.bytes([1])) = writes.takeFirst() else {
            Issue.record("the first write first")
            return
        }
        #expect(writes.count == 2 && texts(writes) == ["<replacing>\u{2}", "<end>"])
        guard case .replacePending(.bytes([2])) = writes.takeFirst(), case .end = writes.takeFirst() else {
            Issue.record("then the others, in order")
            return
        }
        #expect(writes.isEmpty && writes.takeFirst() == nil)
        var one = StreamWire.Writes(.end)
        #expect(one.count == 1)
        _ = one.takeFirst()
        #expect(one.isEmpty && StreamWire.Writes().isEmpty)
    }

    /// A shared transition keeps at most its byte budget of events (it lives until its delivery is over): streams of
    /// a new shape past it make their own, and what it kept is still found.
    @Test func sharedTransitionEventsKeepAtMostTheirByteBudget() {
        let shared = TransitionEventCache()
        let large = [UInt8](repeating: UInt8(ascii: "a"), count: TransitionEventCache.byteBudget / 2 + 1)
        for version: UInt64 in 1...3 {
            let resume = ResumeID(version: ResultVersion(value: version), held: [7])
            let made = shared.bytes(ids: ["a"], idsHash: ["a"].hashValue, resume: resume) { large }
            #expect(made.count == large.count)
        }
        #expect(shared.count == 1, "a second event of half the budget would pass it")
        let again = shared.bytes(ids: ["a"], idsHash: ["a"].hashValue, resume: ResumeID(version: 1, held: [7])) {
            fatalError("made again")
        }
        #expect(again.count == large.count)
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
