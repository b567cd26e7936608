import Synchronization
import Testing

@testable import ConvexGateway

/// An output that records each call a stream makes, by kind, with its bytes as text: what the client's socket is asked
/// to do, step by step.
final class CallRecordingOutput: EventStreamOutput {
    private let state = Mutex<(calls: [String], pending: Int)>(([], 0))

    /// `pending`: the bytes the output says wait for the client (a reader that keeps up: 0).
    init(pending: Int = 0) { state.withLock { $0.pending = pending } }

    var calls: [String] { state.withLock { $0.calls } }
    var pendingByteCount: Int { state.withLock { $0.pending } }

    func write(_ bytes: [UInt8]) { record("write", bytes) }
    func replacePending(with bytes: [UInt8]) { record("replace", bytes) }
    func write(_ bytes: [UInt8], coalescingAt limit: Int) { record("coalesce \(limit)", bytes) }
    func end() { state.withLock { $0.calls.append("end") } }

    private func record(_ kind: String, _ bytes: [UInt8]) {
        state.withLock { $0.calls.append("\(kind): " + String(decoding: bytes, as: UTF8.self)) }
    }
}

/// Every kind of event a stream sends, byte for byte, through ``EventStream``: the wire's decisions, the events' bytes
/// and the shared caches together, as a client reads them.
@Suite struct StreamEventBytesTests {
    let make = EventStreamTests()

    func function(_ output: CallRecordingOutput, patches: Bool = false, limit: Int = 100) -> EventStream {
        EventStream(
            framing: .function, count: 1, format: .plain, output: output, limit: limit, patches: patches,
            resumeFrom: nil)
    }

    func transitions(_ ids: [String], _ output: CallRecordingOutput, patches: Bool = false, resume: String? = nil)
        -> EventStream
    {
        EventStream(
            framing: .transitions(ids: ids), count: ids.count, format: .plain, output: output, limit: 100,
            patches: patches, resumeFrom: resume
        ).started()
    }

    /// An update of hash and version `n` whose patch (from the value of hash `base`) has `ops` as its operations.
    func patched(_ value: String, _ n: UInt64, base: UInt64, ops: String = #"[{"op":"replace","path":"","value":1}]"#)
        -> SubscriptionUpdate
    {
        var update = make.update(.string(value), hash: ContentHash(value: n))
        update.patch = ValuePatch(
            base: ContentHash(value: base), result: ContentHash(value: n),
            fields: Array(#""base":"\#(String(base, radix: 16))","v":"\#(String(n, radix: 16))","ops":\#(ops)"#.utf8))
        return update
    }

    func failure(_ n: UInt64) -> SubscriptionUpdate {
        SubscriptionUpdate(
            current: .init(
                id: "\(n)-\(String(n, radix: 16))", version: ResultVersion(value: n), hash: ContentHash(value: n),
                result: .failure(.functionFailed(message: "boom"))),
            body: Array(#"{"error":{"code":"QueryFailed","message":"boom"}}"#.utf8))
    }

    @Test func aFunctionStreamsValueAndFailureEvents() {
        let output = CallRecordingOutput()
        let stream = function(output)
        stream.deliver(make.transition(1, (0, make.update("one", hash: 0x1A))))
        stream.deliver(make.transition(2, (0, failure(0x2B))))
        #expect(
            output.calls == [
                "coalesce 100: id: 26-1a\ndata: \"one\"\n\n",
                "coalesce 100: event: failure\nid: 43-2b\ndata: {\"error\":{\"code\":\"QueryFailed\",\"message\":\"boom\"}}\n\n",
            ])
    }

    @Test func aFunctionStreamsPatchEventAndItsFullValueWhenThePatchIsNotOnWhatItHolds() {
        let output = CallRecordingOutput()
        let stream = function(output, patches: true)
        stream.deliver(make.transition(1, (0, make.update("one", hash: 1))))
        stream.deliver(make.transition(2, (0, patched("two", 2, base: 1))))
        stream.deliver(make.transition(3, (0, patched("three", 3, base: 9))))
        #expect(
            output.calls == [
                "write: id: 1-1\ndata: \"one\"\n\n",
                "write: event: patch\nid: 2-2\ndata: {\"base\":\"1\",\"v\":\"2\",\"ops\":[{\"op\":\"replace\",\"path\":\"\",\"value\":1}]}\n\n",
                "write: id: 3-3\ndata: \"three\"\n\n",
            ])
    }

    @Test func aFunctionStreamBehindItsLimitGetsItsLatestValueInPlaceOfTheQueue() {
        let output = CallRecordingOutput(pending: 500)
        let stream = function(output, patches: true)
        stream.deliver(make.transition(2, (0, patched("two", 2, base: 1))))
        #expect(output.calls == ["replace: id: 2-2\ndata: \"two\"\n\n"])
    }

    @Test func aTransitionOfValuesPatchesAndErrors() {
        let output = CallRecordingOutput()
        let stream = transitions(["a", "b", "c"], output, patches: true, resume: "1-1.2.")
        stream.deliver(
            make.transition(
                1_700_000_000_000_000_001, (0, patched("x", 0xA, base: 1)), (1, patched("y", 0xB, base: 7)),
                (2, failure(0xC))))
        #expect(
            output.calls == [
                "write: event: transition\nid: 12-a.b.c\ndata: {\"ts\":\"1700000000000000001\",\"changes\":["
                    + "{\"sub\":\"a\",\"base\":\"1\",\"v\":\"a\",\"ops\":[{\"op\":\"replace\",\"path\":\"\",\"value\":1}]},"
                    + "{\"sub\":\"b\",\"value\":\"y\",\"v\":\"b\"},"
                    + "{\"sub\":\"c\",\"error\":{\"code\":\"QueryFailed\",\"message\":\"boom\"}}]}\n\n"
            ])
    }

    @Test func aTransitionStreamBehindItsLimitGetsEverySubscriptionsLatestInPlaceOfTheQueue() {
        let output = CallRecordingOutput()
        let stream = transitions(["a", "b"], output)
        stream.deliver(make.transition(1, (0, make.update("a1", hash: 1)), (1, make.update("b1", hash: 2))))
        let behind = CallRecordingOutput(pending: 100)
        let late = transitions(["a", "b"], behind)
        late.deliver(make.transition(1, (0, make.update("a1", hash: 1)), (1, make.update("b1", hash: 2))))
        late.deliver(make.transition(2, (1, make.update("b2", hash: 3))))
        #expect(
            output.calls == [
                "write: event: transition\nid: 2-1.2\ndata: {\"ts\":\"1\",\"changes\":["
                    + "{\"sub\":\"a\",\"value\":\"a1\",\"v\":\"1\"},{\"sub\":\"b\",\"value\":\"b1\",\"v\":\"2\"}]}\n\n"
            ])
        #expect(
            behind.calls == [
                "replace: event: transition\nid: 2-1.2\ndata: {\"ts\":\"1\",\"changes\":["
                    + "{\"sub\":\"a\",\"value\":\"a1\",\"v\":\"1\"},{\"sub\":\"b\",\"value\":\"b1\",\"v\":\"2\"}]}\n\n",
                "replace: event: transition\nid: 3-1.3\ndata: {\"ts\":\"2\",\"changes\":["
                    + "{\"sub\":\"a\",\"value\":\"a1\",\"v\":\"1\"},{\"sub\":\"b\",\"value\":\"b2\",\"v\":\"3\"}]}\n\n",
            ])
    }

    @Test func refusedCredentialsAreOneFatalEventThenTheEnd() {
        let output = CallRecordingOutput()
        let stream = transitions(["a"], output)
        let refused = SubscriptionUpdate(
            current: .init(
                id: "5-5", version: 5, hash: 5, result: .failure(.unauthenticated("Convex token identity expired"))),
            body: Array(#"{"error":{"code":"Unauthenticated"}}"#.utf8))
        stream.deliver(make.transition(1, (0, refused)))
        stream.deliver(make.transition(2, (0, make.update("later", hash: 6))))
        stream.end()
        #expect(output.calls == ["write: event: fatal\ndata: {\"error\":{\"code\":\"Unauthenticated\"}}\n\n", "end"])
    }

    /// Streams that share a transition and hold the same once they have it write one event, made once; the bytes are
    /// those a stream makes alone.
    @Test func aSharedTransitionIsTheSameBytesAsOneMadeAlone() {
        let alone = CallRecordingOutput()
        transitions(["a"], alone).deliver(make.transition(4, (0, make.update("v", hash: 4))))
        var shared = make.transition(4, (0, make.update("v", hash: 4)))
        shared.shared = TransitionEventCache()
        let outputs = [CallRecordingOutput(), CallRecordingOutput()]
        for output in outputs { transitions(["a"], output).deliver(shared) }
        let expected =
            "write: event: transition\nid: 4-4\n"
            + "data: {\"ts\":\"4\",\"changes\":[{\"sub\":\"a\",\"value\":\"v\",\"v\":\"4\"}]}\n\n"
        #expect(alone.calls == [expected])
        #expect(outputs.map(\.calls) == [[expected], [expected]])
        #expect(shared.shared?.count == 1)
    }
}
