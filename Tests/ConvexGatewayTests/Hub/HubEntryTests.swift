import ConvexSyncProtocol
import ConvexValues
import Testing

@testable import ConvexGateway

/// One entry of the hub on its own: streams attaching and leaving, a result updated and routed to them.
@Suite struct HubEntryTests {
    static let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "messages:list"), args: [:])

    static func entry() -> HubState.Entry {
        HubState.Entry(id: 1, args: [:], owner: .unknown, live: LiveResult())
    }

    static func result(_ value: ConvexValue, hash: ContentHash) -> HubState.EntryResult {
        HubState.EntryResult(key: key, entryID: 1, result: .value(value), hash: hash)
    }

    @Test func aLoneStreamJoinsTheFanOutAndAStreamOfSeveralIsAnAttachment() {
        var entry = Self.entry()
        let alone = RecordingSink()
        let ofTwo = RecordingSink()
        let first = entry.attach(alone, member: 0, of: 1, held: nil)
        let second = entry.attach(ofTwo, member: 1, of: 2, held: nil)
        #expect(first == nil && second == nil, "no result yet: nothing to send")
        #expect(entry.fanOut.count == 1)
        #expect(entry.attachments.count == 1)
        #expect(entry.hasReaders)
        let left = entry.detach(ObjectIdentifier(alone), member: 0, of: 1)
        let leftAgain = entry.detach(ObjectIdentifier(alone), member: 0, of: 1)
        let otherLeft = entry.detach(ObjectIdentifier(ofTwo), member: 1, of: 2)
        #expect(left && otherLeft)
        #expect(!leftAgain, "a second detach finds nothing")
        #expect(!entry.hasReaders)
    }

    @Test func aStreamGetsTheCurrentResultAtOnceUnlessItHoldsIt() {
        var entry = Self.entry()
        _ = entry.update(to: Self.result("a", hash: 0xA), wallMilliseconds: 1)
        let fresh = entry.attach(RecordingSink(), member: 0, of: 1, held: nil)
        let holding = entry.attach(RecordingSink(), member: 0, of: 1, held: 0xA)
        #expect(fresh?.hash == 0xA)
        #expect(holding == nil)
        #expect(entry.fanOut.count == 2, "with a result, a stream that holds it joins the fan-out at once")
    }

    @Test func aNewResultGrowsTheVersionWithTheWallClock() throws {
        var entry = Self.entry()
        let updated = entry.update(to: Self.result("a", hash: 0xA), wallMilliseconds: 100)
        let first = try #require(updated)
        #expect(first.current.version == 100 && first.previous == nil)
        #expect(first.current.id == "100-a")
        let same = entry.update(to: Self.result("a", hash: 0xA), wallMilliseconds: 200)
        #expect(same == nil, "the same result: no change")
        #expect(entry.renderings === first.renderings, "the same result keeps what was made of it")
        let changed = entry.update(to: Self.result("b", hash: 0xB), wallMilliseconds: 50)
        let second = try #require(changed)
        #expect(second.current.version == 101, "a clock that went back does not make the version go back")
        #expect(second.previous?.hash == 0xA)
        #expect(entry.version == second.current.version)
        #expect(entry.live.version == nil, "what the hot path reads is published by the hub's owner (receive)")
    }

    @Test func routingSendsTheFanOutOnceAndEachStreamOfSeveralItsChange() throws {
        var entry = Self.entry()
        let alone = RecordingSink()
        let ofTwo = RecordingSink()
        _ = entry.attach(alone, member: 0, of: 1, held: nil)
        _ = entry.attach(ofTwo, member: 1, of: 2, held: nil)
        var batch = HubState.TransitionBatch(ts: 7)
        let result = entry.update(to: Self.result("a", hash: 0xA), wallMilliseconds: 1)
        entry.route(try #require(result), into: &batch)
        let actions = batch.actions()
        #expect(actions.count == 2)
        guard case .fanOut(let fanOut) = actions[0], case .deliver(let deliveries) = actions[1] else {
            Issue.record("expected a fan-out, then a delivery: \(actions)")
            return
        }
        #expect(fanOut.sinks.count == 1 && fanOut.delivery.ts == 7)
        // The fan-out hands out the entry's slots without copying them: with 10,000 streams a copy is 10,000 slots.
        #expect(
            fanOut.sinks.withUnsafeBufferPointer { $0.baseAddress }
                == entry.fanOut.slots.withUnsafeBufferPointer { $0.baseAddress })
        #expect(deliveries.count == 1 && deliveries[0].sink === ofTwo)
        #expect(deliveries[0].delivery.changes.map(\.member) == [1])
    }

    @Test func aLoneStreamThatHeldAHashJoinsTheFanOutAfterTheResultItHolds() throws {
        var entry = Self.entry()
        let holdsA = RecordingSink()
        let holdsB = RecordingSink()
        _ = entry.attach(holdsA, member: 0, of: 1, held: 0xA)
        _ = entry.attach(holdsB, member: 0, of: 1, held: 0xB)
        #expect(entry.attachments.count == 2 && entry.fanOut.isEmpty, "both wait for a first result")
        var batch = HubState.TransitionBatch(ts: 1)
        let result = entry.update(to: Self.result("a", hash: 0xA), wallMilliseconds: 1)
        entry.route(try #require(result), into: &batch)
        guard case .fanOut(let fanOut) = try #require(batch.actions().first) else {
            Issue.record("expected a fan-out")
            return
        }
        #expect(fanOut.sinks.compactMap { $0 }.map(ObjectIdentifier.init) == [ObjectIdentifier(holdsB)])
        #expect(entry.fanOut.count == 2, "the stream that held the result joins after it")
        #expect(entry.attachments.isEmpty)
    }

    @Test func anEndingEntryEndsEachStreamOnceAndItsWaitersGetNoResult() {
        var entry = Self.entry()
        let stream = RecordingSink()
        _ = entry.attach(stream, member: 0, of: 2, held: nil)
        _ = entry.attach(stream, member: 1, of: 2, held: nil)
        entry.waiters = [4]
        let actions = entry.ending()
        guard actions.count == 2, case .resume(let waiters, let with) = actions[0], case .end(let sinks) = actions[1]
        else {
            Issue.record("expected a resume, then an end: \(actions)")
            return
        }
        #expect(waiters == [4] && with == nil)
        #expect(sinks.count == 1)
    }
}
