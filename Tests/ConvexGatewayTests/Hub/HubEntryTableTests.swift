import ConvexSyncProtocol
import Testing

@testable import ConvexGateway

/// The hub's table of live subscriptions on its own: its limits, what each caller is charged, keep-warm expiry.
@Suite struct HubEntryTableTests {
    static func key(_ n: Int) -> SubscriptionHub.Key {
        SubscriptionHub.Key(
            identity: "", function: try! UdfPath(parsing: "messages:list"), args: ["n": .float64(Double(n))])
    }

    @Test func newEntriesAreRefusedByTheTableFirstThenByTheCallersShare() {
        var table = HubState.EntryTable(keepWarm: .seconds(1), maxSubscriptions: 3, maxSubscriptionsPerCaller: 2)
        let greedy = SubscriptionCaller(client: .address("greedy"))
        #expect(table.refusal(adding: 2, for: greedy) == nil)
        for n in 0..<2 { _ = table.ensure(Self.key(n), args: [:], owner: greedy) { LiveResult() } }
        #expect(table.refusal(adding: 1, for: greedy) == .caller)
        #expect(table.refusal(adding: 1, for: .unknown) == nil)
        #expect(table.refusal(adding: 2, for: .unknown) == .gateway)
        #expect(table.refusal(adding: 2, for: greedy) == .gateway, "past both limits, the table's is named")
        #expect(table.refusal(adding: 0, for: greedy) == nil, "reading entries that live costs nothing")
    }

    @Test func anEntryIsMadeOnceNumberedAndUnchargedWhenRemoved() throws {
        var table = HubState.EntryTable(keepWarm: .seconds(1), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let caller = SubscriptionCaller(client: .address("a"))
        let made = table.ensure(Self.key(1), args: [:], owner: caller) { LiveResult() }
        let again = table.ensure(Self.key(1), args: [:], owner: caller) { LiveResult() }
        let next = table.ensure(Self.key(2), args: [:], owner: caller) { LiveResult() }
        guard case .subscribe(_, let first, _) = made, case .subscribe(_, let second, _) = next else {
            Issue.record("expected two subscribes: \(String(describing: made)), \(String(describing: next))")
            return
        }
        #expect(again == nil, "one entry per key")
        #expect(second == first + 1)
        #expect(table.charged[caller] == 2)
        let entry = try #require(table.byKey[Self.key(1)])
        entry.live.advance(to: 1)
        let retiring = table.remove(Self.key(1), entry)
        #expect(table.charged[caller] == 1)
        guard case .publish(let publication) = retiring, publication.retired.count == 1 else {
            Issue.record("what the hot path reads of it is to retire: \(retiring)")
            return
        }
        #expect(entry.live.version == 1, "the owner retires it, not the table")
        publication.carryOut()
        #expect(entry.live.version == nil)
        _ = table.removeAll()
        #expect(table.charged.isEmpty && table.byKey.isEmpty)
    }

    @Test func anUnreadEntryExpiresAKeepWarmPeriodAfterItsLastReaderOrRead() {
        var table = HubState.EntryTable(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = table.ensure(Self.key(1), args: [:], owner: .unknown) { LiveResult(now: .zero) }
        table.markIdleIfUnread(Self.key(1), now: .seconds(1))
        table.byKey[Self.key(1)]!.live.touch(at: .seconds(5))
        let early = table.expire(now: .seconds(14))
        #expect(early.isEmpty, "read at 5 s: warm until 15 s")
        let closed = table.expire(now: .seconds(15))
        #expect(Self.unsubscribed(closed) == 1 && table.byKey.isEmpty)
        // Read at 0 s, its last reader gone at 8 s: warm until 18 s.
        _ = table.ensure(Self.key(2), args: [:], owner: .unknown) { LiveResult(now: .zero) }
        table.markIdleIfUnread(Self.key(2), now: .seconds(8))
        let stillWarm = table.expire(now: .seconds(17))
        #expect(stillWarm.isEmpty, "the last reader left at 8 s")
        let gone = table.expire(now: .seconds(18))
        #expect(Self.unsubscribed(gone) == 1)
    }

    static func unsubscribed(_ actions: [HubState.Action]) -> Int {
        actions.count { if case .unsubscribe = $0 { true } else { false } }
    }
}
