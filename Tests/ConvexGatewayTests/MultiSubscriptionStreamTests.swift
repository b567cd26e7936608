import ConvexSyncProtocol
import ConvexValues
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ConvexGateway

/// A stream output that records what is written; `behind` simulates a client that stopped reading.
final class RecordingOutput: EventStreamOutput {
    private let state = Mutex<(written: [[UInt8]], pending: [[UInt8]], finished: Bool)>(([], [], false))
    let behind: Bool

    init(behind: Bool = false) { self.behind = behind }

    func write(_ bytes: [UInt8]) {
        state.withLock { state in
            guard !state.finished else { return }
            if behind { state.pending.append(bytes) } else { state.written.append(bytes) }
        }
    }
    var pendingByteCount: Int { state.withLock { $0.pending.reduce(0) { $0 + $1.count } } }
    func replacePending(with bytes: [UInt8]) { state.withLock { $0.pending = [bytes] } }
    func finish() { state.withLock { $0.finished = true } }

    /// Everything the client would read, in order, as events.
    var events: [ReceivedEvent] {
        let text = state.withLock { state in (state.written + state.pending).map { String(decoding: $0, as: UTF8.self) }
        }
        return text.joined().components(separatedBy: "\n\n").filter { !$0.isEmpty }.map(EventStreamReader.parse)
    }
    var isFinished: Bool { state.withLock { $0.finished } }
}

/// The multi-subscription stream on its own: framing, resumption ids, per-subscription coalescing and the
/// whole-stream error, with no server and no hub.
@Suite struct MultiSubscriptionStreamTests {
    func update(_ value: ConvexValue, hash: UInt64) -> SubscriptionUpdate {
        let body = value.json(mode: .plain)
        return SubscriptionUpdate(
            snapshot: .init(id: "1-\(String(hash, radix: 16))", hash: hash, result: .value(value)), hash: hash,
            body: body, event: ServerSentEvent(data: body).encoded())
    }

    func failure(_ failure: UpstreamFailure, hash: UInt64) -> SubscriptionUpdate {
        let body = failure.gatewayError.body { $0.json(mode: .plain) }
        return SubscriptionUpdate(
            snapshot: .init(id: "1-\(String(hash, radix: 16))", hash: hash, result: .failure(failure)), hash: hash,
            body: body, event: ServerSentEvent(event: "error", data: body).encoded())
    }

    func json(_ text: String) throws -> ConvexValue { try ConvexValue(plainJSON: Array(text.utf8)) }

    @Test func eventsNameTheirSubscriptionAndCarryWhatTheClientHolds() throws {
        let output = RecordingOutput()
        let stream = MultiSubscriptionStream(
            ids: ["a", "b-2"], format: .plain, output: output, limit: 1 << 20, resumeFrom: nil)
        let members = stream.makeMembers()
        members[1].deliver(update(["n": 1.0], hash: 0xAAAA_0000_0000_0000))
        members[0].deliver(failure(.functionFailed(message: "boom"), hash: 0xBBBB_0000_0000_0000))
        members[0].deliver(update("ok", hash: 0xCCCC_0000_0000_0000))

        let events = output.events
        #expect(events.map(\.event) == ["value", "error", "value"])
        #expect(try json(events[0].data) == ["sub": "b-2", "value": ["n": 1.0]])
        #expect(
            try json(events[1].data)
                == ["sub": "a", "error": ["code": "FunctionFailed", "message": "boom"]])
        #expect(try json(events[2].data) == ["sub": "a", "value": "ok"])
        // The id tells what the client holds of every subscription, in URL order.
        let lastID = try #require(events[2].id)
        let held = try #require(StreamResumeID(parsing: lastID, count: 2)).held
        #expect(held == [StreamResumeID.token(0xCCCC_0000_0000_0000), StreamResumeID.token(0xAAAA_0000_0000_0000)])
        let firstID = try #require(events[0].id)
        let first = try #require(StreamResumeID(parsing: firstID, count: 2)).held
        #expect(first == [nil, StreamResumeID.token(0xAAAA_0000_0000_0000)])
        #expect(!output.isFinished)
    }

    @Test func lastEventIDSkipsOnlyTheUnchangedSubscriptions() throws {
        let before = RecordingOutput()
        let stream = MultiSubscriptionStream(
            ids: ["a", "b", "c"], format: .plain, output: before, limit: 1 << 20, resumeFrom: nil)
        let members = stream.makeMembers()
        members[0].deliver(update(1.0, hash: 1 << 20))
        members[1].deliver(update(2.0, hash: 2 << 20))
        members[2].deliver(update(3.0, hash: 3 << 20))
        let lastID = try #require(before.events.last?.id)

        // Reconnect: a's value is the same, b's changed meanwhile, c's too.
        let after = RecordingOutput()
        let resumed = MultiSubscriptionStream(
            ids: ["a", "b", "c"], format: .plain, output: after, limit: 1 << 20, resumeFrom: lastID)
        let again = resumed.makeMembers()
        again[0].deliver(update(1.0, hash: 1 << 20))
        again[1].deliver(update(20.0, hash: 20 << 20))
        again[2].deliver(update(30.0, hash: 30 << 20))
        #expect(
            try after.events.map { try json($0.data) } == [["sub": "b", "value": 20.0], ["sub": "c", "value": 30.0]])
        // a's next change is sent.
        again[0].deliver(update(10.0, hash: 10 << 20))
        #expect(try after.events.last.map { try json($0.data) } == ["sub": "a", "value": 10.0])

        // An id of another stream (other subscription count, garbage) resumes nothing: everything is sent.
        for foreign in ["1-abc", lastID + "x", String(lastID.dropLast(8)), String(repeating: "!", count: lastID.count)]
        {
            let fresh = RecordingOutput()
            let stream = MultiSubscriptionStream(
                ids: ["a", "b", "c"], format: .plain, output: fresh, limit: 1 << 20, resumeFrom: foreign)
            let members = stream.makeMembers()
            members[0].deliver(update(1.0, hash: 1 << 20))
            #expect(fresh.events.count == 1, "resumed from \(foreign)")
        }
    }

    @Test func aSlowReaderIsCoalescedToTheLatestOfEverySubscription() throws {
        let output = RecordingOutput(behind: true)
        let stream = MultiSubscriptionStream(
            ids: ["a", "b"], format: .plain, output: output, limit: 64, resumeFrom: nil)
        let members = stream.makeMembers()
        members[0].deliver(update("a1", hash: 1 << 20))
        members[1].deliver(update("b1", hash: 2 << 20))
        for n in 2...50 {
            members[0].deliver(update(.string("a\(n)"), hash: UInt64(n) << 32))
        }
        // Queued: the latest of a and the (only) value of b, never b dropped for a's sake.
        let values = try output.events.map { try json($0.data) }
        #expect(values.count == 2)
        #expect(values.contains(["sub": "a", "value": "a50"]))
        #expect(values.contains(["sub": "b", "value": "b1"]))
        #expect(output.pendingByteCount < 1024)
    }

    @Test func refusedCredentialsEndTheWholeStreamWithOneError() throws {
        let output = RecordingOutput()
        let stream = MultiSubscriptionStream(
            ids: ["a", "b"], format: .plain, output: output, limit: 1 << 20, resumeFrom: nil)
        let members = stream.makeMembers()
        members[0].deliver(update(1.0, hash: 1 << 20))
        members[0].deliver(failure(.unauthenticated("Convex token identity expired"), hash: 9 << 20))
        members[1].deliver(failure(.unauthenticated("Convex token identity expired"), hash: 9 << 20))
        members[1].deliver(update(2.0, hash: 2 << 20))
        let events = output.events
        #expect(events.count == 2)
        #expect(events[1].event == "error")
        #expect(
            try json(events[1].data)
                == ["error": ["code": "Unauthenticated", "message": "Convex token identity expired"]])
        #expect(output.isFinished)
    }
}

@Suite struct StreamResumeIDTests {
    @Test func roundTripsAndRefusesWhatIsNotOne() {
        let id = StreamResumeID(held: [nil, 0, (1 << 48) - 1, 0x1234_5678_9ABC])
        #expect(id.text.count == 32)
        #expect(id.text.hasPrefix("........"))
        #expect(StreamResumeID(parsing: id.text, count: 4) == id)
        #expect(StreamResumeID(parsing: id.text, count: 3) == nil)
        #expect(StreamResumeID(parsing: "", count: 0) == nil)
        #expect(StreamResumeID(parsing: String(id.text.dropLast()) + "*", count: 4) == nil)
        #expect(StreamResumeID(parsing: "1700000000000-abc", count: 1) == nil)
    }
}

@Suite struct StreamSubscriptionsTests {
    func parse(_ query: String, limit: Int = 100) throws(GatewayError) -> [StreamSubscriptions.Subscription] {
        try StreamSubscriptions(try QueryString(raw: query[...]), limit: limit).subscriptions
    }

    @Test func readsSubscriptionsInURLOrderWithOptionalArguments() throws {
        let subscriptions = try parse(
            "sub.team=mlb:first_place_team&args.team=%7B%22division%22%3A%22AL%20Central%22%7D&sub.all-2=messages:list&format=clean"
        )
        #expect(subscriptions.map(\.id) == ["team", "all-2"])
        #expect(subscriptions.map(\.function.canonical) == ["mlb:first_place_team", "messages:list"])
        guard case .body(let args) = subscriptions[0].input, case .body(let none) = subscriptions[1].input else {
            Issue.record("arguments not read")
            return
        }
        #expect(args == ["division": "AL Central"])
        #expect(none == [:])
    }

    @Test(arguments: [
        ("", "InvalidSubscriptions", "at least one"),
        ("format=plain", "InvalidSubscriptions", "at least one"),
        ("sub.a=x:y&sub.a=x:z", "InvalidSubscriptions", "'a' is given more than once"),
        ("sub.a%20b=x:y", "InvalidSubscriptions", "'a b' is not valid"),
        ("sub.=x:y", "InvalidSubscriptions", "is not valid"),
        ("sub.\(String(repeating: "a", count: 65))=x:y", "InvalidSubscriptions", "is not valid"),
        ("sub.a", "InvalidSubscriptions", "has no value"),
        ("sub.a=x:y&args.b=%7B%7D", "InvalidSubscriptions", "args.b is given without sub.b"),
        ("sub.a=x:y&division=1", "InvalidSubscriptions", "Unknown query parameter 'division'"),
        ("sub.a=x:y&sub.b=x:z&sub.c=x:w", "InvalidSubscriptions", "3 subscriptions on one stream; at most 2"),
        ("sub.a=x:y&args.a=%5B1%5D", "InvalidArguments", "Subscription 'a': args.a must be a JSON object"),
        ("sub.a=x:y&args.a=%7Bnope", "MalformedJSON", "Subscription 'a': args.a is not valid JSON"),
        ("sub.a=..%2Fx:y", "InvalidFunctionPath", "Subscription 'a': invalid function path"),
    ])
    func refusesBadURLsNamingTheSubscription(query: String, code: String, message: String) {
        do {
            _ = try parse(query, limit: 2)
            Issue.record("accepted \(query)")
        } catch {
            #expect(error.status == 400)
            #expect(error.code.rawValue == code)
            #expect(error.message.contains(message), "\(error.message)")
        }
    }
}
