import Clocks
import ConvexSyncProtocol
import ConvexValues
import Logging
import Synchronization
import Testing

@testable import ConvexGateway

/// An in-process upstream whose query sets the test drives by hand; the hub's bookkeeping is tested against it.
/// (End-to-end tests run the hub against a real deployment.)
final class ScriptedUpstream: ConvexUpstream {
    /// One query set: its members, and the transitions the test pushes.
    final class QuerySet: UpstreamQuerySet {
        let transitions: AsyncStream<UpstreamTransition>
        let continuation: AsyncStream<UpstreamTransition>.Continuation
        let members = Mutex<[UInt64: (function: String, args: ConvexValue)]>([:])
        let upstream: ScriptedUpstream

        init(upstream: ScriptedUpstream) {
            self.upstream = upstream
            (transitions, continuation) = AsyncStream.makeStream(of: UpstreamTransition.self)
        }

        func add(_ token: UInt64, _ function: String, args: ConvexValue) {
            upstream.opened.add(1, ordering: .relaxed)
            members.withLock { $0[token] = (function, args) }
        }

        func remove(_ token: UInt64) { _ = members.withLock { $0.removeValue(forKey: token) } }

        func close() {
            members.withLock { $0 = [:] }
            continuation.finish()
            upstream.sets.withLock { sets in sets.removeAll { $0 === self } }
        }
    }

    fileprivate let sets = Mutex<[QuerySet]>([])
    fileprivate let opened = Atomic<Int>(0)
    /// The latest timestamp's nanoseconds.
    private let timestamp = Atomic<UInt64>(0)

    /// Members added so far (upstream subscriptions opened).
    var subscribeCount: Int { opened.load(ordering: .relaxed) }
    /// Members of open query sets now.
    var activeCount: Int { sets.withLock { $0.reduce(0) { $0 + $1.members.withLock { $0.count } } } }

    func makeQuerySet() -> any UpstreamQuerySet {
        let set = QuerySet(upstream: self)
        sets.withLock { $0.append(set) }
        return set
    }

    /// One transition giving every member `result`.
    func push(_ result: UpstreamResult) {
        push { _, _ in result }
    }

    /// One transition: each member gets the result `change` gives for its function and arguments (`nil`: unchanged).
    func push(_ change: (String, ConvexValue) -> UpstreamResult?) {
        let ts = ConvexTimestamp(nanoseconds: timestamp.add(1, ordering: .relaxed).newValue)
        for set in sets.withLock({ $0 }) {
            let changes = set.members.withLock { members in
                members.keys.sorted().compactMap { token in
                    change(members[token]!.function, members[token]!.args).map {
                        UpstreamTransition.TokenResult(token: token, result: $0)
                    }
                }
            }
            if !changes.isEmpty { set.continuation.yield(UpstreamTransition(ts: ts, changes: changes)) }
        }
    }

    /// Ends every query set's transitions (the connection closed).
    func endAll() {
        let open = sets.withLock { sets in
            defer { sets = [] }
            return sets
        }
        for set in open {
            set.members.withLock { $0 = [:] }
            set.continuation.finish()
        }
    }

    func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration) async throws(UpstreamFailure)
        -> UpstreamAnswer
    {
        // A mutation commits at the next timestamp; no query set hears of it (none of their queries changed).
        guard kind == .mutation else { return UpstreamAnswer(value: .null, ts: latestTimestamp) }
        let commit = timestamp.add(1, ordering: .relaxed).newValue
        return UpstreamAnswer(value: .null, ts: ConvexTimestamp(nanoseconds: commit))
    }

    /// Asks made to move the connection's view (``waitForView(atLeast:timeout:)``).
    var viewRequests: Int { refreshes.load(ordering: .relaxed) }
    private let refreshes = Atomic<Int>(0)

    /// As the Convex backend answers a refresh: one transition of every query set at the latest timestamp (that of
    /// the last ``push(_:)``), with no changes. A timestamp beyond the latest is never reached.
    func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp {
        refreshes.add(1, ordering: .relaxed)
        let latest = latestTimestamp
        for set in sets.withLock({ $0 }) { set.continuation.yield(UpstreamTransition(ts: latest, changes: [])) }
        return latest
    }

    /// The timestamp of the latest ``push(_:)``.
    var latestTimestamp: ConvexTimestamp { ConvexTimestamp(nanoseconds: timestamp.load(ordering: .relaxed)) }
    var isConnected: Bool { true }
    func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) {}
    func close() async { endAll() }
}

/// A stream's sink that records what the hub delivers: each change's `/subscribe/<function>` event, and each
/// transition.
final class RecordingSink: EventSink {
    let format: OutputFormat
    private let events = Mutex<[String]>([])
    private let recorded = Mutex<[StreamTransition]>([])
    private let finished = Atomic<Bool>(false)

    init(format: OutputFormat = .encoded) { self.format = format }

    func deliver(_ transition: StreamTransition) {
        recorded.withLock { $0.append(transition) }
        events.withLock { events in
            for change in transition.changes {
                events.append(String(decoding: StreamEventEncoding.function(change.update), as: UTF8.self))
            }
        }
    }

    func end() { finished.store(true, ordering: .relaxed) }

    var received: [String] { events.withLock { $0 } }
    var transitions: [StreamTransition] { recorded.withLock { $0 } }
    var isFinished: Bool { finished.load(ordering: .relaxed) }
}

extension SubscriptionHub {
    /// Attaches a one-subscription stream, as `/subscribe/<function>` does.
    func attach(
        _ sink: any EventSink, to key: Key, args: ConvexValue, upstream: any ConvexUpstream, held: ContentHash?
    ) throws(AttachError) {
        try attach(sink, members: [Member(key: key, args: args, held: held)], upstream: upstream)
    }

    func detach(_ sink: any EventSink, from key: Key) {
        detach(sink, members: [key])
    }

    /// The waits the hub keeps now: `[wakes registered, waiting GETs over every entry]`.
    var waitsKept: [Int] {
        state.withLock { locked in
            [locked.wakes.count, locked.hub.entries.values.reduce(0) { $0 + $1.waiters.count }]
        }
    }
}

/// The hash a one-subscription stream's event id says the client holds.
func held(fromEventID id: String) -> ContentHash? {
    ResumeID(parsing: id, count: 1)?.held.first ?? nil
}

@Suite(.timeLimit(.minutes(5))) struct SubscriptionHubTests {
    let function = try! UdfPath(parsing: "messages:list")

    func makeHub(keepWarm: Duration = .milliseconds(100), max: Int = 100, clock: TestClock<Duration> = TestClock())
        -> SubscriptionHub
    {
        SubscriptionHub(
            keepWarm: keepWarm, maxSubscriptions: max, maxSubscriptionsPerCaller: max, metrics: GatewayMetrics(),
            logger: Logger(label: "test"),
            clock: GatewayClock(clock)
        ) { value, _ in value.convexJSON() }
    }

    @Test func streamsShareOneUpstreamSubscriptionAndGetEachChangeOnce() async throws {
        let hub = makeHub()
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: [:])
        let a = RecordingSink(), b = RecordingSink()
        try hub.attach(a, to: key, args: [:], upstream: upstream, held: nil)
        try hub.attach(b, to: key, args: [:], upstream: upstream, held: nil)
        await waitUntil { upstream.activeCount == 1 }
        #expect(upstream.subscribeCount == 1)
        upstream.push(.value(.float64(1)))
        upstream.push(.value(.float64(1)))  // unchanged: no event
        upstream.push(.value(.float64(2)))
        await waitUntil { a.received.count == 2 && b.received.count == 2 }
        #expect(a.received.map { $0.hasSuffix("data: 1.0\n\n") } == [true, false])
        #expect(a.received == b.received)
        let hot = try #require(hub.currentBody(for: key, format: .encoded))
        #expect(hot.body == Array("2.0".utf8))
        hub.detach(a, from: key)
        hub.detach(b, from: key)
    }

    @Test func lastEventIDSuppressesAnUnchangedFirstEvent() async throws {
        let hub = makeHub()
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: [:])
        let first = RecordingSink()
        try hub.attach(first, to: key, args: [:], upstream: upstream, held: nil)
        await waitUntil { upstream.activeCount == 1 }
        upstream.push(.value("hello"))
        await waitUntil { first.received.count == 1 }
        let id = try #require(first.received.first?.split(separator: "\n").first { $0.hasPrefix("id: ") }?.dropFirst(4))

        let same = RecordingSink()
        try hub.attach(
            same, to: key, args: [:], upstream: upstream, held: held(fromEventID: String(id)))
        let stale = RecordingSink()
        try hub.attach(
            stale, to: key, args: [:], upstream: upstream, held: held(fromEventID: "1-abc"))
        #expect(same.received.isEmpty)
        #expect(stale.received.count == 1)
        upstream.push(.value("changed"))
        await waitUntil { same.received.count == 1 }
        #expect(same.received.first?.contains("data: \"changed\"") == true)
    }

    @Test func errorsArriveAsErrorEventsAndTheStreamCarriesOn() async throws {
        let hub = makeHub()
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: [:])
        let sink = RecordingSink()
        try hub.attach(sink, to: key, args: [:], upstream: upstream, held: nil)
        await waitUntil { upstream.activeCount == 1 }
        upstream.push(.failure(.functionFailed(message: "boom")))
        upstream.push(.value(true))
        await waitUntil { sink.received.count == 2 }
        #expect(sink.received[0].hasPrefix("event: failure\nid: "))
        #expect(sink.received[0].contains(#"data: {"error":{"code":"FunctionFailed","message":"boom"}}"#))
        #expect(sink.received[1].hasSuffix("data: true\n\n"))
        #expect(!sink.isFinished)
    }

    @Test func coldGetWaitsForTheFirstResultAndTheSubscriptionStaysWarmThenCloses() async throws {
        let clock = TestClock<Duration>()
        let hub = makeHub(keepWarm: .seconds(10), clock: clock)
        let sweeper = Task { await hub.runSweeper() }
        defer { sweeper.cancel() }
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: ["n": 1.0])
        async let first = hub.firstResult(for: key, args: ["n": 1.0], upstream: upstream, timeout: .seconds(5))
        await waitUntil { upstream.activeCount == 1 }
        upstream.push(.value(.int64(7)))
        let current = try #require(await first.read).current
        #expect(current.result == .value(.int64(7)))
        #expect(hub.currentBody(for: key, format: .encoded) != nil)
        await clock.advance(by: .seconds(9))
        #expect(hub.subscriptionCount == 1, "still warm within the keep-warm period")
        #expect(upstream.activeCount == 1)
        await clock.advance(by: .seconds(4))
        await waitUntil { upstream.activeCount == 0 }
        #expect(upstream.activeCount == 0)
        #expect(hub.subscriptionCount == 0)
    }

    @Test func coldGetTimesOutWithNil() async {
        let clock = TestClock<Duration>()
        let hub = makeHub(clock: clock)
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: [:])
        async let result = hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(30))
        await waitUntil { upstream.activeCount == 1 }
        await clock.advance(by: .seconds(30))
        #expect(await result.read == nil)
    }

    @Test func aFirstResultAtTheSubscriptionLimitIsRefusedAtOnce() async throws {
        // The test clock never moves: no deadline ends these waits.
        let hub = makeHub(max: 1)
        let upstream = ScriptedUpstream()
        let taken = SubscriptionHub.Key(identity: "", function: function, args: ["a": 1.0])
        let fresh = SubscriptionHub.Key(identity: "", function: function, args: ["a": 2.0])
        try hub.attach(RecordingSink(), to: taken, args: ["a": 1.0], upstream: upstream, held: nil)
        let refused = await hub.firstResult(for: fresh, args: ["a": 2.0], upstream: upstream, timeout: .seconds(30))
        #expect(refused.limit == .gateway)
        // Together with a key that has its place but no result yet: the refusal ends the other wait too.
        let firsts = await hub.firstResults(
            of: [(key: taken, args: ["a": 1.0]), (key: fresh, args: ["a": 2.0])], upstream: upstream,
            timeout: .seconds(30))
        #expect(firsts.map(\.isFull) == [false, true])
        #expect(firsts[0].read == nil)
        #expect(hub.subscriptionCount == 1)
        #expect(upstream.subscribeCount == 1)
        #expect(hub.waitsKept == [0, 0])
    }

    @Test func aCallerThatGivesUpLeavesNothingBehind() async throws {
        let clock = TestClock<Duration>()
        let hub = makeHub(keepWarm: .seconds(60), clock: clock)
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: [:])
        // Its client leaves: the request's task is cancelled, with the clock standing still.
        let leaving = Task { await hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(30)) }
        await waitUntil { hub.waitsKept == [1, 1] }
        leaving.cancel()
        #expect(await leaving.value.read == nil)
        #expect(hub.waitsKept == [0, 0])
        // Its deadline passes.
        async let late = hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(30))
        await waitUntil { hub.waitsKept == [1, 1] }
        await clock.advance(by: .seconds(30))
        #expect(await late.read == nil)
        #expect(hub.waitsKept == [0, 0])
        // The subscription stays warm for the next reader.
        #expect(hub.subscriptionCount == 1)
        #expect(upstream.subscribeCount == 1)
    }

    @Test func identitiesDoNotShare() async throws {
        let hub = makeHub()
        let alice = ScriptedUpstream(), bob = ScriptedUpstream()
        let a = RecordingSink(), b = RecordingSink()
        let keyA = SubscriptionHub.Key(identity: "alice", function: function, args: [:])
        let keyB = SubscriptionHub.Key(identity: "bob", function: function, args: [:])
        try hub.attach(a, to: keyA, args: [:], upstream: alice, held: nil)
        try hub.attach(b, to: keyB, args: [:], upstream: bob, held: nil)
        await waitUntil { alice.activeCount == 1 && bob.activeCount == 1 }
        alice.push(.value("secret of alice"))
        await waitUntil { a.received.count == 1 }
        #expect(b.received.isEmpty)
    }

    @Test func upstreamEndFinishesStreamsAndShutdownFinishesTheRest() async throws {
        let hub = makeHub()
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: [:])
        let sink = RecordingSink()
        try hub.attach(sink, to: key, args: [:], upstream: upstream, held: nil)
        await waitUntil { upstream.activeCount == 1 }
        upstream.endAll()
        await waitUntil { sink.isFinished }
        #expect(sink.isFinished)

        let other = RecordingSink()
        try hub.attach(other, to: key, args: [:], upstream: upstream, held: nil)
        hub.shutdown()
        #expect(other.isFinished)
        #expect(throws: SubscriptionHub.AttachError.self) {
            try hub.attach(RecordingSink(), to: key, args: [:], upstream: upstream, held: nil)
        }
    }

    @Test func subscriptionLimit() async throws {
        let hub = makeHub(max: 1)
        let upstream = ScriptedUpstream()
        let (a, b) = (
            SubscriptionHub.Key(identity: "", function: function, args: ["a": 1.0]),
            SubscriptionHub.Key(identity: "", function: function, args: ["a": 2.0])
        )
        try hub.attach(RecordingSink(), to: a, args: ["a": 1.0], upstream: upstream, held: nil)
        // The limit refuses a stream in its first results' wait, before it is answered...
        let first = await hub.firstResult(for: b, args: ["a": 2.0], upstream: upstream, timeout: .seconds(5))
        #expect(first.limit == .gateway)
        #expect(hub.subscriptionCount == 1, "a refused wait makes no subscription")
        // ...never as it attaches: a stream answered 200 is not refused afterwards.
        try hub.attach(RecordingSink(), to: b, args: ["a": 2.0], upstream: upstream, held: nil)
        #expect(hub.subscriptionCount == 2)
    }
}

@Suite(.timeLimit(.minutes(5))) struct UpstreamPoolTests {
    @Test func oneConnectionPerIdentityAndIdleUserConnectionsClose() async throws {
        let made = Mutex<[UpstreamIdentity]>([])
        let clock = TestClock<Duration>()
        let pool = UpstreamPool(idleTimeout: .seconds(60), logger: Logger(label: "test"), clock: GatewayClock(clock)) {
            identity in
            made.withLock { $0.append(identity) }
            return ScriptedUpstream()
        }
        let anon = try pool.upstream(for: .anonymous)
        let alice = try pool.upstream(for: .bearer("alice.jwt"))
        let alice2 = try pool.upstream(for: .bearer("alice.jwt"))
        let bob = try pool.upstream(for: .bearer("bob.jwt"))
        #expect(anon.id == "")
        #expect(alice.id == alice2.id)
        #expect(alice.id != bob.id)
        #expect(!alice.id.contains("alice"))
        #expect(made.withLock { $0.count } == 3)
        await clock.advance(by: .seconds(59))
        await pool.closeIdle { $0 == bob.id }
        #expect(pool.connectionCount == 3, "nobody is idle for the whole timeout yet")
        await clock.advance(by: .seconds(1))
        await pool.closeIdle { $0 == bob.id }
        #expect(pool.connectionCount == 2)  // anonymous stays; bob is claimed as in use
        #expect(try pool.upstream(for: .bearer("alice.jwt")).id != alice.id)
    }

    @Test func signedInIdentitiesBeyondTheBoundAreRefusedUntilOneIsClosed() async throws {
        let clock = TestClock<Duration>()
        let pool = UpstreamPool(
            idleTimeout: .seconds(60), maxIdentities: 2, logger: Logger(label: "test"), clock: GatewayClock(clock)
        ) { _ in ScriptedUpstream() }
        let alice = try pool.upstream(for: .bearer("alice.jwt"))
        _ = try pool.upstream(for: .bearer("bob.jwt"))
        #expect(throws: GatewayError.identityLimitReached(retryAfter: 60)) {
            try pool.upstream(for: .bearer("carol.jwt"))
        }
        await #expect(throws: GatewayError.identityLimitReached(retryAfter: 60)) {
            try await pool.withUpstream(for: .bearer("carol.jwt")) { _, _ in 1 }
        }
        // The identities that hold a connection, and anonymous callers, are served.
        #expect(try pool.upstream(for: .bearer("alice.jwt")).id == alice.id)
        _ = try pool.upstream(for: .anonymous)
        #expect(pool.connectionCount == 3)
        // Once idle ones are closed, new identities get their places.
        await clock.advance(by: .seconds(60))
        await pool.closeIdle { _ in false }
        #expect(pool.connectionCount == 1)
        _ = try pool.upstream(for: .bearer("carol.jwt"))
        let called = try await pool.withUpstream(for: .bearer("dave.jwt")) { _, _ in 1 }
        #expect(called == 1)
        #expect(throws: GatewayError.self) { try pool.upstream(for: .bearer("eve.jwt")) }
    }
}
