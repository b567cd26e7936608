import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
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
    func end() { state.withLock { $0.finished = true } }

    /// Everything the client would read, in order, as events.
    var events: [ReceivedEvent] {
        let text = state.withLock { state in (state.written + state.pending).map { String(decoding: $0, as: UTF8.self) }
        }
        return text.joined().components(separatedBy: "\n\n").filter { !$0.isEmpty }.map(EventStreamReader.parse)
    }
    var isFinished: Bool { state.withLock { $0.finished } }
}

/// The event stream on its own: transition framing, resumption ids, coalescing and the whole-stream error, with no
/// server and no hub.
@Suite struct EventStreamTests {
    /// A result of version `version` (by default the hash, so that later test values are newer).
    func update(_ value: ConvexValue, hash: ContentHash, version: ResultVersion? = nil) -> SubscriptionUpdate {
        let body = value.json(mode: .plain)
        let version = version ?? ResultVersion(value: hash.value)
        return SubscriptionUpdate(
            current: .init(
                id: "\(version.value)-\(String(hash.value, radix: 16))", version: version, hash: hash,
                result: .value(value)),
            body: body)
    }

    func failure(_ failure: UpstreamFailure, hash: ContentHash, version: ResultVersion? = nil) -> SubscriptionUpdate {
        let body = failure.gatewayError(logging: Logger(label: "test")).body { $0.json(mode: .plain) }
        let version = version ?? ResultVersion(value: hash.value)
        return SubscriptionUpdate(
            current: .init(
                id: "\(version.value)-\(String(hash.value, radix: 16))", version: version, hash: hash,
                result: .failure(failure)),
            body: body)
    }

    /// A `/subscribe?sub.<id>=…` stream; `started`: once its start (holding nothing) has come.
    func stream(
        _ ids: [String], _ output: any EventStreamOutput, limit: Int = 1 << 20, resume: String? = nil,
        started: Bool = true
    ) -> EventStream {
        let stream = EventStream(
            framing: .transitions(ids: ids), count: ids.count, format: .plain, output: output, limit: limit,
            resumeFrom: resume)
        return started ? stream.started() : stream
    }

    func transition(_ ts: ConvexTimestamp, _ changes: (Int, SubscriptionUpdate)...) -> StreamTransition {
        StreamTransition(ts: ts, changes: changes.map { .init(member: $0.0, update: $0.1) })
    }

    func json(_ text: String) throws -> ConvexValue { try ConvexValue(plainJSON: Array(text.utf8)) }

    @Test func oneTransitionIsOneEventNamingEachSubscriptionAndCarryingWhatTheClientHolds() throws {
        let output = RecordingOutput()
        let stream = stream(["a", "b-2"], output)
        stream.deliver(transition(1_700_000_000_000_000_001, (1, update(["n": 1.0], hash: 0xAAAA, version: 1))))
        stream.deliver(
            transition(
                1_700_000_000_000_000_002, (0, failure(.functionFailed(message: "boom"), hash: 0xBBBB, version: 2)),
                (1, update(["n": 2.0], hash: 0xDDDD, version: 7))))
        stream.deliver(transition(1_700_000_000_000_000_003, (0, update("ok", hash: 0xCCCC, version: 3))))

        let events = output.events
        #expect(events.map(\.event) == ["transition", "transition", "transition"])
        #expect(
            try json(events[0].data)
                == ["ts": "1700000000000000001", "changes": [["sub": "b-2", "value": ["n": 1.0], "v": "aaaa"]]])
        #expect(
            try json(events[1].data)
                == [
                    "ts": "1700000000000000002",
                    "changes": [
                        ["sub": "a", "error": ["code": "FunctionFailed", "message": "boom"]],
                        ["sub": "b-2", "value": ["n": 2.0], "v": "dddd"],
                    ],
                ])
        #expect(
            try json(events[2].data) == [
                "ts": "1700000000000000003", "changes": [["sub": "a", "value": "ok", "v": "cccc"]],
            ])
        // The id tells what the client holds of every subscription, in URL order.
        #expect(events[0].id == "1-.aaaa")
        #expect(events[2].id == "7-cccc.dddd")
        #expect(ResumeID(parsing: try #require(events[2].id), count: 2)?.held == [0xCCCC, 0xDDDD])
        #expect(!output.isFinished)
    }

    /// A transition's timestamp is written with all its digits, whatever their number, and a body that breaks a line
    /// (no JSON the gateway writes does) still makes one well-framed event.
    @Test func transitionsAreFramedWhateverTheirTimestampAndBody() throws {
        let output = RecordingOutput()
        let stream = stream(["a"], output)
        let timestamps: [UInt64] = [0, 9, 10, 1_700_000_000_000_000_000, UInt64.max]
        for (index, nanoseconds) in timestamps.enumerated() {
            let ts = ConvexTimestamp(nanoseconds: nanoseconds)
            let hash = ContentHash(value: UInt64(index + 1))
            stream.deliver(transition(ts, (0, update(.int64(Int64(index)), hash: hash))))
        }
        let broken = SubscriptionUpdate(
            current: .init(id: "99-63", version: 99, hash: 99, result: .value("x")),
            body: Array("\"line\none\"".utf8))
        stream.deliver(transition(1, (0, broken)))

        let events = output.events
        #expect(events.count == timestamps.count + 1)
        for (event, ts) in zip(events, timestamps) {
            let data = try json(event.data)
            guard case .object(let fields) = data else { throw CancellationError() }
            #expect(fields["ts"] == .string(String(ts)))
        }
        // Each line of the data is a `data:` line of the same event, which a client joins with a line break.
        #expect(events.last?.event == "transition")
        #expect(events.last?.data == #"{"ts":"1","changes":[{"sub":"a","value":"line"# + "\n" + #"one","v":"63"}]}"#)
        #expect(events.last?.id == "99-63")
    }

    @Test func aLastEventIDTellsTheHubWhatTheClientHolds() throws {
        let before = RecordingOutput()
        let first = stream(["a", "b", "c"], before)
        first.deliver(transition(1, (0, update(1.0, hash: 1)), (1, update(2.0, hash: 2)), (2, update(3.0, hash: 3))))
        let lastID = try #require(before.events.last?.id)
        #expect(stream(["a", "b", "c"], RecordingOutput(), resume: lastID).held == [1, 2, 3])

        // An id of another stream (another subscription count, garbage) holds nothing: everything is sent.
        for foreign in ["1-abc", lastID + "x", lastID + ".", "1-.", "x-1.2.3", "1-1.2.10000000000000000"] {
            #expect(
                stream(["a", "b", "c"], RecordingOutput(), resume: foreign).held == [nil, nil, nil], "\(foreign)")
        }
    }

    @Test func aSlowReaderIsCoalescedToTheLatestOfEverySubscription() throws {
        let output = RecordingOutput(behind: true)
        let stream = stream(["a", "b"], output, limit: 64)
        stream.deliver(transition(1, (0, update("a1", hash: 1)), (1, update("b1", hash: 2))))
        for n in 2...50 {
            let ts = ConvexTimestamp(nanoseconds: UInt64(n))
            stream.deliver(transition(ts, (0, update(.string("a\(n)"), hash: ContentHash(value: UInt64(n) << 32)))))
        }
        // Queued: one transition with the latest of a and the (only) value of b, never b dropped for a's sake.
        let events = try output.events.map { try json($0.data) }
        #expect(events.count == 1)
        #expect(
            events.first?["changes"]
                == [["sub": "a", "value": "a50", "v": "3200000000"], ["sub": "b", "value": "b1", "v": "2"]])
        #expect(events.first?["ts"] == "50")
        #expect(output.pendingByteCount < 1024)
    }

    @Test func refusedCredentialsEndTheWholeStreamWithOneError() throws {
        let output = RecordingOutput()
        let stream = stream(["a", "b"], output)
        stream.deliver(transition(1, (0, update(1.0, hash: 1))))
        let expired = failure(.unauthenticated("Convex token identity expired"), hash: 9)
        stream.deliver(transition(2, (0, expired), (1, expired)))
        stream.deliver(transition(3, (1, update(2.0, hash: 2))))
        let events = output.events
        #expect(events.count == 2)
        #expect(events[1].event == "fatal")
        #expect(events[1].id == nil)
        #expect(
            try json(events[1].data)
                == ["error": ["code": "Unauthenticated", "message": "Convex token identity expired"]])
        #expect(output.isFinished)
    }

    /// The hub makes a stream's start under its lock and delivers it after leaving the lock, so a transition made
    /// after it may reach the stream first. A stream of several subscriptions sends nothing before its start and then
    /// one event with both, each subscription's newer result: sent alone, the transition would show its client `a` of
    /// the transition beside the `b` it held from before (a browser test saw that torn list after a gateway restart).
    @Test func aTransitionThatOvertakesTheStartGoesOutWithItAsOneEvent() throws {
        let output = RecordingOutput()
        let stream = stream(["a", "b"], output, started: false)
        stream.deliver(transition(2, (0, update("a2", hash: 0xA2, version: 2))))
        #expect(output.events.isEmpty, "nothing before the start")
        var start = transition(1, (0, update("a1", hash: 0xA1, version: 1)), (1, update("b1", hash: 0xB1, version: 1)))
        start.isFirst = true
        stream.deliver(start)
        let events = try output.events.map { try json($0.data) }
        #expect(events.count == 1)
        #expect(
            events.first == [
                "ts": "2",
                "changes": [["sub": "a", "value": "a2", "v": "a2"], ["sub": "b", "value": "b1", "v": "b1"]],
            ], "a's newer result, b's from the start, at the later snapshot")
        #expect(output.events.last?.id == "2-a2.b1")
        stream.deliver(transition(3, (1, update("b3", hash: 0xB3, version: 3))))
        #expect(
            try output.events.map { try json($0.data) }.last?["changes"] == [["sub": "b", "value": "b3", "v": "b3"]])

        // A start that holds nothing (its client held every result) lets what overtook it go.
        let holding = RecordingOutput()
        let resumed = self.stream(["a", "b"], holding, resume: "1-a1.b1", started: false)
        resumed.deliver(transition(2, (1, update("b2", hash: 0xB2, version: 2))))
        #expect(holding.events.isEmpty)
        resumed.deliver(.emptyStart)
        #expect(holding.events.map(\.id) == ["2-a1.b2"])
    }

    @Test func aResultOlderThanTheOneSentIsDropped() throws {
        // A single subscription's stream takes what comes before its start: it cannot mix two snapshots.
        let single = RecordingOutput()
        let function = EventStream(
            framing: .function, count: 1, format: .plain, output: single, limit: 1 << 20, resumeFrom: nil)
        function.deliver(transition(2, (0, update("new", hash: 2))))
        function.deliver(transition(1, (0, update("old", hash: 1))))
        #expect(single.events.map(\.data) == [#""new""#])
    }

    @Test func aFunctionStreamSendsTheHubsEventsAsTheyAre() throws {
        let output = RecordingOutput()
        let stream = EventStream(
            framing: .function, count: 1, format: .plain, output: output, limit: 1 << 20, resumeFrom: "5-abc")
        #expect(stream.held == [0xABC])
        let value = update("v", hash: 1)
        stream.deliver(transition(1, (0, value)))
        #expect(output.events.map(\.data) == [#""v""#])
        #expect(output.events.first?.event == nil)
    }
}

@Suite struct ResumeIDTests {
    @Test func roundTripsAndRefusesWhatIsNotOne() {
        let id = ResumeID(version: 1_700_000_000_000, held: [nil, 0, ContentHash(value: UInt64.max), 0x1234_5678_9ABC])
        #expect(id.text == "1700000000000-.0.ffffffffffffffff.123456789abc")
        #expect(ResumeID(parsing: id.text, count: 4) == id)
        #expect(ResumeID(parsing: id.text, count: 3) == nil)
        #expect(ResumeID(parsing: "", count: 0) == nil)
        #expect(ResumeID(parsing: String(id.text.dropLast()) + "*", count: 4) == nil)
        // A `/subscribe/<function>` event id is the resume id of a one-subscription stream.
        #expect(ResumeID(parsing: "1700000000000-abc", count: 1)?.held == [0xABC])
    }

    /// The one written form of a hash, alone and after other bytes: lowercase hex without leading zeros, as the
    /// standard library writes it, and read back by `init(parsing:)`.
    @Test func hashesAreWrittenAsTheStandardLibraryWritesHex() {
        var generator = SystemRandomNumberGenerator()
        let samples: [UInt64] =
            [0, 1, 9, 10, 15, 16, 0xABC, 1 << 63, UInt64.max]
            + (0..<1000).map { _ in
                generator.next() >> UInt64.random(in: 0..<64)
            }
        for value in samples {
            let hash = ContentHash(value: value)
            #expect(hash.text == String(value, radix: 16))
            #expect(ContentHash(parsing: hash.text[...]) == hash)
            var after = Array("7.".utf8)
            hash.append(to: &after)
            #expect(after == Array("7.\(String(value, radix: 16))".utf8))
        }
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
        guard case .body(let args, _) = subscriptions[0].input, case .body(let none, _) = subscriptions[1].input else {
            Issue.record("arguments not read")
            return
        }
        #expect(args == ["division": "AL Central"])
        #expect(none == [:])
    }

    /// Each bad URL, its code, a part of its message, and the subscription its `sub` field names (none when the error
    /// is about the whole URL).
    static let badURLs: [(String, String, String, String?)] = [
        ("", "InvalidSubscriptions", "at least one", nil),
        ("format=plain", "InvalidSubscriptions", "at least one", nil),
        ("sub.a=x:y&sub.a=x:z", "InvalidSubscriptions", "Subscription 'a': sub.a is given more than once", "a"),
        ("sub.a=x:y&args.a=%7B%7D&args.a=%7B%7D", "InvalidSubscriptions", "args.a is given more than once", "a"),
        ("sub.a%20b=x:y", "InvalidSubscriptions", "'a b' is not valid", nil),
        ("sub.=x:y", "InvalidSubscriptions", "is not valid", nil),
        ("sub.\(String(repeating: "a", count: 65))=x:y", "InvalidSubscriptions", "is not valid", nil),
        ("sub.a", "InvalidSubscriptions", "has no value", "a"),
        ("sub.a=x:y&args.b=%7B%7D", "InvalidSubscriptions", "args.b is given without sub.b", "b"),
        ("sub.a=x:y&division=1", "InvalidSubscriptions", "Unknown query parameter 'division'", nil),
        ("sub.a=x:y&sub.b=x:z&sub.c=x:w", "InvalidSubscriptions", "3 subscriptions on one stream; at most 2", nil),
        ("sub.a=x:y&args.a=%5B1%5D", "InvalidArguments", "Subscription 'a': args.a must be a JSON object", "a"),
        ("sub.a=x:y&args.a=%7Bnope", "MalformedJSON", "Subscription 'a': args.a is not valid JSON", "a"),
        ("sub.ok=x:y&sub.a=..%2Fx:y", "InvalidFunctionPath", "Subscription 'a': invalid function path", "a"),
        ("sub.ok=x:y&sub.a=messages.list", "InvalidFunctionPath", "Subscription 'a': invalid function path", "a"),
        ("sub.ok=x:y&sub.a=%3Ax", "InvalidFunctionPath", "Subscription 'a': invalid function path", "a"),
        ("sub.ok=x:y&sub.a=mlb%3A%3Ax", "InvalidFunctionPath", "Subscription 'a': invalid function path", "a"),
    ]

    @Test(arguments: badURLs)
    func refusesBadURLsNamingTheSubscription(query: String, code: String, message: String, sub: String?) {
        do {
            _ = try parse(query, limit: 2)
            Issue.record("accepted \(query)")
        } catch {
            #expect(error.status == 400)
            #expect(error.code.rawValue == code)
            #expect(error.message.contains(message), "\(error.message)")
            #expect(error.concerns?.field == (sub == nil ? nil : "sub"), "\(query)")
            #expect(error.concerns?.id == sub, "\(query)")
        }
    }

    /// A batch's queries are refused by the same rules, each naming its query in the `query` field.
    @Test(arguments: badURLs)
    func refusesBadBatchURLsNamingTheQuery(query: String, code: String, message: String, sub: String?) {
        let batch = query.replacingOccurrences(of: "sub.", with: "q.")
        do {
            _ = try StreamSubscriptions(try QueryString(raw: batch[...]), limit: 2, kind: .batch)
            Issue.record("accepted \(batch)")
        } catch {
            #expect(error.status == 400)
            let batchCode = code == "InvalidSubscriptions" ? "InvalidQueries" : code
            #expect(error.code.rawValue == batchCode)
            #expect(error.concerns?.field == (sub == nil ? nil : "query"), "\(batch)")
            #expect(error.concerns?.id == sub, "\(batch)")
            if sub != nil { #expect(error.message.hasPrefix("Query '\(sub ?? "")': "), "\(error.message)") }
        }
    }

    /// A query string that cannot be decoded names the subscription its `sub.<id>` or `args.<id>` belongs to.
    static let undecodable: [(String, String?)] = [
        ("args.a=%7B%FF%7D", "a"), ("sub.b=%E0%80", "b"), ("args.c=%zz", "c"), ("other=%FF", nil),
        ("args.%20=%FF", nil),
    ]

    @Test(arguments: undecodable)
    func anUndecodableParameterNamesItsSubscription(query: String, sub: String?) {
        do {
            _ = try QueryString(raw: query[...]) { error, parameter in
                StreamSubscriptions.Kind.stream.naming(error, parameter: parameter)
            }
            Issue.record("accepted \(query)")
        } catch {
            #expect(error.code == .invalidArguments)
            #expect(error.concerns?.id == sub, "\(query)")
        }
    }
}
