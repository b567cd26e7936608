import ConvexSyncProtocol
import ConvexValues
import Testing

@testable import ConvexGateway

/// The hub's state machine on its own: events in, actions out, time passed in. No I/O, no tasks, no clock.
@Suite struct HubStateTests {
    let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "messages:list"), args: [:])
    let other = SubscriptionHub.Key(identity: "u1", function: try! UdfPath(parsing: "messages:list"), args: [:])

    func subscribed(_ actions: [HubState.Action]) -> [UInt64] {
        actions.compactMap { if case .subscribe(_, let generation, _) = $0 { generation } else { nil } }
    }

    func unsubscribed(_ actions: [HubState.Action]) -> [UInt64] {
        actions.compactMap { if case .unsubscribe(_, let generation) = $0 { generation } else { nil } }
    }

    func delivered(_ actions: [HubState.Action]) -> [(SubscriptionHub.Snapshot, Int)] {
        actions.compactMap {
            if case .deliver(let snapshot, _, _, let sinks) = $0 { (snapshot, sinks.count) } else { nil }
        }
    }

    @Test func theFirstReaderSubscribesAndLaterReadersShare() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10)
        let (initial, actions) = try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .zero)
        #expect(initial == nil)
        #expect(subscribed(actions) == [1])
        let (_, again) = try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .zero)
        #expect(again.isEmpty)
        guard case .waiting(let waitActions) = hub.wait(7, for: key, args: [:], now: .zero) else {
            Issue.record("a GET before the first result waits")
            return
        }
        #expect(waitActions.isEmpty)

        let actions2 = hub.receive(.value(1.0), hash: 11, key: key, generation: 1, wallMilliseconds: 1000, now: .zero)
        #expect(delivered(actions2).map(\.1) == [2])
        #expect(delivered(actions2).first?.0.id == "1000-b")
        #expect(actions2.contains { if case .resume([7], _) = $0 { true } else { false } })
        // The same result again changes nothing; a result of an older generation is ignored.
        #expect(hub.receive(.value(1.0), hash: 11, key: key, generation: 1, wallMilliseconds: 2000, now: .zero).isEmpty)
        #expect(hub.receive(.value(2.0), hash: 12, key: key, generation: 0, wallMilliseconds: 2000, now: .zero).isEmpty)
        // Event ids keep growing even if the wall clock steps back.
        let next = hub.receive(.value(2.0), hash: 12, key: key, generation: 1, wallMilliseconds: 10, now: .zero)
        #expect(delivered(next).first?.0.id == "1001-c")
        #expect(hub.entries[key]?.live.revision == 2)
    }

    @Test func aLastEventIDWithTheCurrentHashSkipsTheFirstEventOnly() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10)
        _ = try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .zero)
        _ = hub.receive(.value("a"), hash: 5, key: key, generation: 1, wallMilliseconds: 1, now: .zero)
        #expect(try hub.attach(RecordingSink(), to: key, args: [:], skipHash: 5, now: .zero).initial == nil)
        #expect(try hub.attach(RecordingSink(), to: key, args: [:], skipHash: 6, now: .zero).initial?.id == "1-5")

        // Attached before any result: the first result is skipped only if it is the one the client has.
        var fresh = HubState(keepWarm: .seconds(10), maxSubscriptions: 10)
        _ = try fresh.attach(RecordingSink(), to: key, args: [:], skipHash: 5, now: .zero)
        let skipped = fresh.receive(.value("a"), hash: 5, key: key, generation: 1, wallMilliseconds: 1, now: .zero)
        #expect(delivered(skipped).isEmpty)
        let changed = fresh.receive(.value("b"), hash: 6, key: key, generation: 1, wallMilliseconds: 2, now: .zero)
        #expect(delivered(changed).count == 1)
    }

    @Test func keepWarmCountsFromTheLastReaderAndTheLastRead() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10)
        let sink = RecordingSink()
        _ = try hub.attach(sink, to: key, args: [:], skipHash: nil, now: .seconds(0))
        _ = hub.receive(.value(1.0), hash: 1, key: key, generation: 1, wallMilliseconds: 1, now: .seconds(1))
        #expect(hub.tick(now: .seconds(100)).isEmpty, "a stream is reading it")
        let detached = hub.detach(ObjectIdentifier(sink), from: key, now: .seconds(100))
        let detachedTwice = hub.detach(ObjectIdentifier(sink), from: key, now: .seconds(100))
        #expect(detached && !detachedTwice)
        #expect(hub.tick(now: .seconds(109)).isEmpty)
        // A GET read at 108 extends the keep-warm period to 118.
        hub.entries[key]?.live.touch(at: .seconds(108))
        #expect(hub.tick(now: .seconds(117)).isEmpty)
        let expired = hub.tick(now: .seconds(118))
        #expect(unsubscribed(expired) == [1])
        #expect(hub.entries[key] == nil)
        // The next reader subscribes anew.
        let (_, actions) = try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .seconds(120))
        #expect(subscribed(actions) == [2])
    }

    @Test func aWaitThatTimesOutLeavesTheSubscriptionWarm() {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10)
        guard case .waiting(let actions) = hub.wait(1, for: key, args: [:], now: .zero) else {
            Issue.record("expected to wait")
            return
        }
        #expect(subscribed(actions) == [1])
        let stopped = hub.stopWaiting(1, for: key, now: .seconds(5))
        let stoppedTwice = hub.stopWaiting(1, for: key, now: .seconds(5))
        #expect(stopped && !stoppedTwice)
        #expect(hub.tick(now: .seconds(14)).isEmpty)
        #expect(unsubscribed(hub.tick(now: .seconds(15))) == [1])
    }

    @Test func theSubscriptionLimitRefusesNewKeysOnly() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 1)
        _ = try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .zero)
        #expect(throws: SubscriptionHub.AttachError.tooManySubscriptions) {
            try hub.attach(RecordingSink(), to: other, args: [:], skipHash: nil, now: .zero)
        }
        guard case .ready(nil) = hub.wait(2, for: other, args: [:], now: .zero) else {
            Issue.record("a GET of a new key at the limit is answered with nothing")
            return
        }
        _ = try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .zero)
    }

    @Test func anEndedUpstreamFinishesItsStreamsAndWaitersAndShutdownEndsEverything() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10)
        let sink = RecordingSink()
        _ = try hub.attach(sink, to: key, args: [:], skipHash: nil, now: .zero)
        _ = hub.wait(3, for: key, args: [:], now: .zero)
        let ended = hub.upstreamEnded(key, generation: 1)
        #expect(ended.contains { if case .finish(let sinks) = $0 { sinks.count == 1 } else { false } })
        #expect(ended.contains { if case .resume([3], nil) = $0 { true } else { false } })
        #expect(hub.entries.isEmpty)
        #expect(hub.upstreamEnded(key, generation: 1).isEmpty)

        _ = try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .zero)
        _ = try hub.attach(RecordingSink(), to: other, args: [:], skipHash: nil, now: .zero)
        let live = try #require(hub.entries[key]?.live)
        let shutdown = hub.shutdown()
        #expect(unsubscribed(shutdown).sorted() == [2, 3])
        #expect(live.revision == nil)
        #expect(throws: SubscriptionHub.AttachError.shuttingDown) {
            try hub.attach(RecordingSink(), to: key, args: [:], skipHash: nil, now: .zero)
        }
        guard case .ready(nil) = hub.wait(4, for: key, args: [:], now: .zero) else {
            Issue.record("a GET after shutdown is answered with nothing")
            return
        }
    }
}
