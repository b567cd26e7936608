import ConvexValues
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ConvexGateway

/// When a stream with `delta=json-patch` sends a patch and when the full value, with no server and no hub: a patch
/// only on the value the reader holds, a full value after a slow reader's queue was replaced.
@Suite struct DeltaStreamTests {
    /// The update from `old` to `new`, with its patch as the hub makes it.
    func update(from old: (ConvexValue, ContentHash)?, to new: ConvexValue, hash: ContentHash) -> SubscriptionUpdate {
        let body = new.json(mode: .plain)
        let current = CurrentResult(
            id: "1-\(String(hash.value, radix: 16))", version: ResultVersion(value: hash.value), hash: hash,
            result: .value(new))
        var update = SubscriptionUpdate(current: current, body: body)
        if let old {
            let previous = CurrentResult(
                id: "0-\(String(old.1.value, radix: 16))", version: 0, hash: old.1, result: .value(old.0))
            update.patch = ValueDelta.patch(from: previous, to: current, body: body) { $0.json(mode: .plain) }
        }
        return update
    }

    /// A `/subscribe/<function>` stream.
    func single(_ output: any EventStreamOutput, limit: Int = 1 << 20, patches: Bool = false, resume: String? = nil)
        -> EventStream
    {
        EventStream(
            framing: .function, count: 1, format: .plain, output: output, limit: limit, patches: patches,
            resumeFrom: resume)
    }

    static let list: ConvexValue = .array((0..<50).map { ["_id": .string("d\($0)"), "text": .string("item \($0)")] })
    static func edited(_ n: Int) -> ConvexValue {
        guard case .array(var items) = list else { return list }
        items[n] = ["_id": .string("d\(n)"), "text": "edited"]
        return .array(items)
    }

    @Test func aSingleStreamPatchesOnlyTheValueItSent() throws {
        let output = RecordingOutput()
        let stream = single(output, patches: true)
        stream.deliver(
            StreamTransition(ts: 1, changes: [.init(member: 0, update: update(from: nil, to: Self.list, hash: 1))]))
        stream.deliver(
            StreamTransition(
                ts: 1, changes: [.init(member: 0, update: update(from: (Self.list, 1), to: Self.edited(3), hash: 2))]))
        // The hub's previous value is one this stream never sent (it attached later): the full value.
        stream.deliver(
            StreamTransition(
                ts: 1,
                changes: [.init(member: 0, update: update(from: (Self.edited(7), 9), to: Self.edited(4), hash: 3))]))
        stream.deliver(
            StreamTransition(
                ts: 1,
                changes: [.init(member: 0, update: update(from: (Self.edited(4), 3), to: Self.edited(5), hash: 4))]))
        #expect(output.events.map(\.event) == [nil, "patch", nil, "patch"])
        #expect(output.events[1].id == "1-2", "a patch's id is its new value's")
        let patch = try ConvexValue(plainJSON: Array(output.events[1].data.utf8))
        #expect(patch["base"] == "1")
        #expect(patch["v"] == "2")
        #expect(patch["ops"] == [["op": "replace", "path": "/3/text", "value": "edited"]])
    }

    @Test func aStreamWithoutDeltasIgnoresPatches() {
        let output = RecordingOutput()
        let stream = single(output)
        stream.deliver(
            StreamTransition(ts: 1, changes: [.init(member: 0, update: update(from: nil, to: Self.list, hash: 1))]))
        stream.deliver(
            StreamTransition(
                ts: 1, changes: [.init(member: 0, update: update(from: (Self.list, 1), to: Self.edited(3), hash: 2))]))
        #expect(output.events.map(\.event) == [nil, nil])
    }

    @Test func aResumedStreamPatchesTheValueItsLastEventIDNames() {
        let output = RecordingOutput()
        let stream = single(output, patches: true, resume: "5-1")
        stream.deliver(
            StreamTransition(
                ts: 1, changes: [.init(member: 0, update: update(from: (Self.list, 1), to: Self.edited(3), hash: 2))]))
        #expect(output.events.map(\.event) == ["patch"])
    }

    @Test func aSlowReaderGetsTheFullValueAndThenPatchesAgain() {
        let output = RecordingOutput(behind: true)
        let stream = single(output, limit: 1, patches: true)
        stream.deliver(
            StreamTransition(ts: 1, changes: [.init(member: 0, update: update(from: nil, to: Self.list, hash: 1))]))
        // Behind: what is queued (the first value) is replaced by the new full value, not patched.
        stream.deliver(
            StreamTransition(
                ts: 1, changes: [.init(member: 0, update: update(from: (Self.list, 1), to: Self.edited(3), hash: 2))]))
        #expect(output.events.map(\.event) == [nil])
        #expect(output.events.first?.id == "1-2")
    }

    @Test func aTransitionStreamPatchesPerSubscriptionAndValuesCarryTheirHash() throws {
        let output = RecordingOutput()
        let stream = EventStream(
            framing: .transitions(ids: ["a", "b"]), count: 2, format: .plain, output: output, limit: 1 << 20,
            patches: true, resumeFrom: nil
        ).started()
        stream.deliver(
            StreamTransition(
                ts: 1,
                changes: [
                    .init(member: 0, update: update(from: nil, to: Self.list, hash: 1)),
                    .init(member: 1, update: update(from: nil, to: Self.list, hash: 1)),
                ]))
        // `b` holds hash 1, not 9: full value; `a` holds 1: a patch. Both in one event.
        stream.deliver(
            StreamTransition(
                ts: 2,
                changes: [
                    .init(member: 0, update: update(from: (Self.list, 1), to: Self.edited(3), hash: 2)),
                    .init(member: 1, update: update(from: (Self.edited(8), 9), to: Self.edited(4), hash: 3)),
                ]))
        #expect(output.events.map(\.event) == ["transition", "transition"])
        let first = try ConvexValue(plainJSON: Array(output.events[0].data.utf8))
        #expect(first["ts"] == "1")
        #expect(first["changes"]?[0]?["v"] == "1")
        let second = try ConvexValue(plainJSON: Array(output.events[1].data.utf8))
        let patch = try #require(second["changes"]?[0])
        #expect(patch["sub"] == "a")
        #expect(patch["base"] == "1")
        #expect(patch["ops"] == [["op": "replace", "path": "/3/text", "value": "edited"]])
        #expect(second["changes"]?[1]?["sub"] == "b")
        #expect(second["changes"]?[1]?["v"] == "3")
        #expect(second["changes"]?[1]?["value"] == Self.edited(4))
        // Every event's id says what the client holds, patches included.
        #expect(output.events[1].id == ResumeID(version: 3, held: [2, 3]).text)
    }

    @Test func aSlowTransitionStreamReaderGetsEveryLatestValueWholeThenPatchesAgain() {
        let output = CatchingUpOutput()
        let stream = EventStream(
            framing: .transitions(ids: ["a"]), count: 1, format: .plain, output: output, limit: 1, patches: true,
            resumeFrom: nil)
        stream.deliver(
            StreamTransition(ts: 1, changes: [.init(member: 0, update: update(from: nil, to: Self.list, hash: 1))]))
        stream.deliver(
            StreamTransition(
                ts: 2, changes: [.init(member: 0, update: update(from: (Self.list, 1), to: Self.edited(3), hash: 2))]))
        #expect(output.texts.count == 1)
        #expect(output.texts[0].hasPrefix("event: transition\n"))
        #expect(!output.texts[0].contains("\"ops\""))
        output.catchUp()
        // The queue was replaced by the value of hash 2, which the client now holds: patches resume.
        stream.deliver(
            StreamTransition(
                ts: 3,
                changes: [.init(member: 0, update: update(from: (Self.edited(3), 2), to: Self.edited(4), hash: 3))]))
        #expect(output.texts.count == 2)
        #expect(output.texts[1].contains("\"ops\""))
    }
}

/// An output that is behind (everything queued) until `catchUp()`.
final class CatchingUpOutput: EventStreamOutput {
    private let state = Mutex<(queued: [[UInt8]], behind: Bool)>(([], true))

    func write(_ bytes: [UInt8]) { state.withLock { $0.queued.append(bytes) } }
    var pendingByteCount: Int { state.withLock { $0.behind ? $0.queued.reduce(0) { $0 + $1.count } : 0 } }
    func replacePending(with bytes: [UInt8]) { state.withLock { $0.queued = [bytes] } }
    func end() {}
    func catchUp() { state.withLock { $0.behind = false } }
    var texts: [String] { state.withLock { $0.queued.map { String(decoding: $0, as: UTF8.self) } } }
}
