import ConvexSyncProtocol
import ConvexValues
import TestSupport
import Testing

@testable import ConvexGateway

/// The waits' deadlines as the hub's state returns them: every wait that begins arms one deadline, and whichever ends
/// it (its answer, its deadline, its caller leaving, its upstream ending, shutdown) cancels that deadline once.
@Suite struct HubWaitsTests {
    let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "messages:list"), args: [:])
    let other = SubscriptionHub.Key(identity: "u1", function: try! UdfPath(parsing: "messages:list"), args: [:])

    func armed(_ actions: [HubState.Action]) -> [UInt64: Duration] {
        var armed: [UInt64: Duration] = [:]
        for case .armDeadline(let wait, let deadline) in actions { armed[wait] = deadline }
        return armed
    }

    func cancelled(_ actions: [HubState.Action]) -> [UInt64] {
        actions.flatMap { action -> [UInt64] in
            if case .cancelDeadlines(let waits) = action { waits.sorted() } else { [] }
        }
    }

    func gaveUp(_ actions: [HubState.Action]) -> [UInt64] {
        actions.flatMap { action -> [UInt64] in
            if case .giveUp(let waits) = action { waits.sorted() } else { [] }
        }
    }

    func firstResultWait(_ hub: inout HubState, _ wait: UInt64, _ key: SubscriptionHub.Key, deadline: Duration)
        -> [HubState.Action]
    {
        guard case .waiting(let actions) = hub.wait(wait, for: key, args: [:], deadline: deadline, now: .zero) else {
            Issue.record("wait \(wait) was expected to wait")
            return []
        }
        return actions
    }

    func timestampWait(_ hub: inout HubState, _ wait: UInt64, identity: String, target: ConvexTimestamp)
        -> [HubState.Action]
    {
        let start = hub.waitForTimestamp(
            wait, identity: identity, target: target, subscribed: true, deadline: .seconds(9))
        guard case .waiting(let actions) = start else {
            Issue.record("timestamp wait \(wait) was expected to wait")
            return []
        }
        return actions
    }

    @Test func thePartAloneArmsOnceAndEndsOnce() {
        var waits = HubState.Waits()
        var nothing: [HubState.Action] = [.resume(waiters: [1], with: nil)]
        waits.ending(&nothing)
        #expect(nothing.count == 1, "no wait is open: nothing is added")

        guard case .armDeadline(wait: 1, at: .seconds(3)) = waits.begin(1, .timestamp, deadline: .seconds(3)) else {
            Issue.record("a wait's beginning arms its deadline")
            return
        }
        _ = waits.begin(2, .change, deadline: .seconds(4))
        var actions: [HubState.Action] = [.reached(waiters: [1, 7], true)]
        waits.ending(&actions)
        #expect(cancelled(actions) == [1], "the open wait among those woken; 7 was never armed")
        #expect(waits.end(1) == nil, "ended once")
        #expect(waits.end(2) == .change)
        #expect(waits.isEmpty)
    }

    @Test func aFirstResultCancelsItsDeadline() {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let actions = firstResultWait(&hub, 1, key, deadline: .seconds(5))
        #expect(armed(actions) == [1: .seconds(5)])
        let result = hub.receive(.value(1.0), hash: 11, key: key, entryID: 1, wallMilliseconds: 1, now: .zero)
        #expect(result.contains { if case .resume([1], _?) = $0 { true } else { false } })
        #expect(cancelled(result) == [1])
        #expect(hub.waitEnded(1, now: .seconds(5)).isEmpty, "a deadline that fires late finds the wait over")
    }

    @Test func aDeadlineOrADepartedCallerEndsAFirstResultWaitWithNothing() {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = firstResultWait(&hub, 1, key, deadline: .seconds(5))
        _ = firstResultWait(&hub, 2, key, deadline: .seconds(6))
        let ended = hub.waitEnded(1, now: .seconds(5))
        #expect(gaveUp(ended) == [1] && cancelled(ended) == [1])
        #expect(hub.entries[key]?.waiters == [2], "the other wait goes on")
        #expect(hub.waitEnded(1, now: .seconds(5)).isEmpty, "a wait ends once")

        let result = hub.receive(.value(1.0), hash: 11, key: key, entryID: 1, wallMilliseconds: 1, now: .zero)
        #expect(result.contains { if case .resume([2], _?) = $0 { true } else { false } }, "only the one still waiting")
        #expect(cancelled(result) == [2])
    }

    @Test func timestampWaitsCancelTheirDeadlineWhenReachedGivenUpOrTheirConnectionEnds() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        _ = try hub.attach(RecordingSink(), to: other, args: [:], held: nil, now: .zero)
        #expect(armed(timestampWait(&hub, 1, identity: "", target: 50)) == [1: .seconds(9)])
        _ = timestampWait(&hub, 2, identity: "", target: 90)
        _ = timestampWait(&hub, 3, identity: "u1", target: 50)

        let reached = hub.receive(ts: 60, identity: "", changes: [], wallMilliseconds: 1, now: .zero)
        #expect(cancelled(reached) == [1])
        let givenUp = hub.waitEnded(2, now: .seconds(9))
        #expect(gaveUp(givenUp) == [2] && cancelled(givenUp) == [2])
        #expect(cancelled(hub.receive(ts: 100, identity: "", changes: [], wallMilliseconds: 1, now: .zero)).isEmpty)
        let ended = hub.connectionEnded(identity: "u1", members: [(other, 2)])
        #expect(cancelled(ended) == [3])
    }

    @Test func aLongPollsWaitEndsOnceWhateverEndsIt() {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        #expect(armed(hub.waitForChange(4, deadline: .seconds(30))) == [4: .seconds(30)])
        let ended = hub.waitEnded(4, now: .seconds(2))
        #expect(gaveUp(ended) == [4] && cancelled(ended) == [4])
        #expect(hub.waitEnded(4, now: .seconds(30)).isEmpty)
    }

    @Test func anEndedUpstreamAndShutdownCancelTheDeadlinesOfTheWaitsTheyEnd() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = firstResultWait(&hub, 1, key, deadline: .seconds(5))
        let ended = hub.upstreamEnded(key, entryID: 1)
        #expect(ended.contains { if case .resume([1], nil) = $0 { true } else { false } })
        #expect(cancelled(ended) == [1])

        _ = firstResultWait(&hub, 2, key, deadline: .seconds(5))
        _ = try hub.attach(RecordingSink(), to: other, args: [:], held: nil, now: .zero)
        _ = timestampWait(&hub, 3, identity: "u1", target: 50)
        _ = hub.waitForChange(4, deadline: .seconds(5))
        let shutdown = hub.shutdown()
        #expect(cancelled(shutdown) == [2, 3], "the long-poll's wait ends when its sink is ended, through its caller")
        #expect(cancelled(hub.waitEnded(4, now: .zero)) == [4])
    }

    /// Any sequence of waits beginning, results, deadlines, departures, upstream ends and shutdown: a wait's deadline
    /// is cancelled by the actions that wake it, every deadline armed is cancelled exactly once by the time every wait
    /// has ended, and none is cancelled that was not armed.
    @Test(arguments: 0..<20) func everyArmedDeadlineIsCancelledExactlyOnce(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 4, maxSubscriptionsPerCaller: 4)
        let keys = (0..<3).map {
            SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "q:f\($0)"), args: [:])
        }
        var armedWaits: Set<UInt64> = []
        var cancels: [UInt64: Int] = [:]
        var nextWait: UInt64 = 1
        var ts: UInt64 = 0
        func record(_ actions: [HubState.Action]) {
            // A wait woken by these actions has its deadline cancelled by them too, not later.
            let woken = actions.flatMap { action -> [UInt64] in
                switch action {
                case .resume(let waits, _), .reached(let waits, _), .giveUp(let waits): waits
                default: []
                }
            }
            let open = Set(woken).intersection(armedWaits).filter { cancels[$0] == nil }
            #expect(open.isSubset(of: cancelled(actions)), "woken without their deadline cancelled (seed \(seed))")
            armedWaits.formUnion(armed(actions).keys)
            for wait in cancelled(actions) { cancels[wait, default: 0] += 1 }
        }
        for step in 0..<60 {
            let now = Duration.seconds(step)
            switch random.next() % 7 {
            case 0:
                let key = keys[Int(random.next() % 3)]
                if case .waiting(let actions) = hub.wait(
                    nextWait, for: key, args: [:], deadline: now + .seconds(3), now: now)
                {
                    record(actions)
                }
                nextWait += 1
            case 1:
                let start = hub.waitForTimestamp(
                    nextWait, identity: "", target: ConvexTimestamp(nanoseconds: ts + 5), subscribed: true,
                    deadline: now + .seconds(3))
                if case .waiting(let actions) = start { record(actions) }
                nextWait += 1
            case 2:
                record(hub.waitForChange(nextWait, deadline: now + .seconds(3)))
                nextWait += 1
            case 3:
                ts += 3
                let key = keys[Int(random.next() % 3)]
                let entryID = hub.entries[key]?.id ?? 0
                let change = HubState.EntryResult(
                    key: key, entryID: entryID, result: .value(.float64(Double(step))),
                    hash: ContentHash(value: UInt64(step + 1)))
                record(
                    hub.receive(
                        ts: ConvexTimestamp(nanoseconds: ts), identity: "", changes: [change], wallMilliseconds: 1,
                        now: now))
            case 4, 5:
                guard nextWait > 1 else { continue }
                record(hub.waitEnded(1 + random.next() % (nextWait - 1), now: now))
            default:
                if random.next() % 4 == 0 {
                    let key = keys[Int(random.next() % 3)]
                    if let entry = hub.entries[key] { record(hub.upstreamEnded(key, entryID: entry.id)) }
                } else if random.next() % 8 == 0 {
                    record(hub.shutdown())
                }
            }
            #expect(cancels.values.allSatisfy { $0 == 1 }, "no deadline is cancelled twice (seed \(seed))")
        }
        // Every caller's wait ends: its answer came, or it gives up now.
        for wait in 1..<nextWait { record(hub.waitEnded(wait, now: .seconds(100))) }
        #expect(Set(cancels.keys) == armedWaits, "seed \(seed)")
        #expect(cancels.values.allSatisfy { $0 == 1 }, "seed \(seed)")
        #expect(hub.waits.isEmpty)
    }
}
