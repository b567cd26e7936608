import ConvexSyncProtocol
import ConvexValues
import Testing

@testable import ConvexGateway

/// A stream of several subscriptions that resumes (`Last-Event-ID`) on a gateway that has no result yet for some of
/// them: its client holds results of an older snapshot, so it gets nothing until each of those has its first result,
/// and then one delivery at that snapshot (``HubState/ResumingStreams``).
@Suite struct HubResumingStreamsTests {
    let team = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "mlb:first_place_team"), args: [:])
    let teams = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "mlb:teams"), args: [:])
    let standings = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "mlb:standings"), args: [:])

    func change(_ key: SubscriptionHub.Key, _ entryID: UInt64, hash: ContentHash) -> HubState.EntryResult {
        HubState.EntryResult(key: key, entryID: entryID, result: .value(.float64(Double(hash.value))), hash: hash)
    }

    func receive(_ hub: inout HubState, ts: ConvexTimestamp, wall: UInt64, _ changes: [HubState.EntryResult])
        -> [HubState.Action]
    {
        hub.receive(ts: ts, identity: "", changes: changes, wallMilliseconds: wall, now: .zero)
    }

    /// What `sink` got from `actions`: each delivery's timestamp and its (member, result id, previous id) triples.
    func got(_ sink: RecordingSink, _ actions: [HubState.Action]) -> [(ts: ConvexTimestamp, changes: [String])] {
        var got: [(ts: ConvexTimestamp, changes: [String])] = []
        for action in actions {
            switch action {
            case .deliver(let deliveries):
                for (to, delivery) in deliveries where to === sink {
                    got.append(
                        (
                            delivery.ts,
                            delivery.changes.map { "\($0.member):\($0.current.id):\($0.previous?.id ?? "-")" }
                        ))
                }
            case .fanOut(let fanOut) where fanOut.sinks.contains { $0 === sink }:
                got.append((fanOut.delivery.ts, fanOut.delivery.changes.map { "\($0.member):\($0.current.id)" }))
            default: break
            }
        }
        return got
    }

    /// Whether each delivery to `sink` in `actions` is its start.
    func starts(_ sink: RecordingSink, _ actions: [HubState.Action]) -> [Bool] {
        actions.flatMap { action -> [Bool] in
            guard case .deliver(let deliveries) = action else { return [] }
            return deliveries.filter { $0.sink === sink }.map(\.delivery.isFirst)
        }
    }

    @Test func firstResultsInTwoTransitionsReachTheStreamAsOneDeliveryAtTheLater() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let resumed = RecordingSink(), watcher = RecordingSink()
        let (initial, actions) = try hub.attach(
            resumed,
            members: [
                .init(key: team, args: [:], held: 0x10), .init(key: teams, args: [:], held: 0x20),
                .init(key: standings, args: [:], held: 0x30),
            ], now: .zero)
        _ = try hub.attach(watcher, members: [.init(key: team, args: [:])], now: .zero)
        #expect(initial == nil)
        #expect(actions.count == 3, "each member subscribes upstream")
        // Entry ids: team 1, teams 2, standings 3.
        let first = receive(&hub, ts: 100, wall: 5, [change(team, 1, hash: 0x11), change(standings, 3, hash: 0x31)])
        #expect(got(resumed, first).isEmpty, "teams still shows the older snapshot: nothing yet")
        #expect(got(watcher, first).map(\.changes) == [["0:5-11"]], "a stream that holds nothing is not held back")
        let second = receive(&hub, ts: 200, wall: 6, [change(teams, 2, hash: 0x21)])
        #expect(got(resumed, second).map(\.ts) == [200])
        #expect(got(resumed, second).first?.changes == ["0:5-11:-", "1:6-21:-", "2:5-31:-"])
        #expect(starts(resumed, second) == [true], "the release is the stream's start")
        #expect(hub.resuming.isEmpty)
        let third = receive(&hub, ts: 300, wall: 7, [change(team, 1, hash: 0x12)])
        #expect(got(resumed, third).first?.changes == ["0:7-12:5-11"], "released: changes go out as they come")
        #expect(starts(resumed, third) == [false])
    }

    @Test func aFirstResultTheClientHoldsCountsAndIsNotSent() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let sink = RecordingSink(), holdsBoth = RecordingSink()
        _ = try hub.attach(
            sink, members: [.init(key: team, args: [:], held: 0x10), .init(key: teams, args: [:], held: 0x20)],
            now: .zero)
        _ = try hub.attach(
            holdsBoth, members: [.init(key: team, args: [:], held: 0x10), .init(key: teams, args: [:], held: 0x21)],
            now: .zero)
        #expect(got(sink, receive(&hub, ts: 100, wall: 5, [change(team, 1, hash: 0x10)])).isEmpty)
        let second = receive(&hub, ts: 200, wall: 6, [change(teams, 2, hash: 0x21)])
        #expect(got(sink, second).map(\.changes) == [["1:6-21:-"]], "team's first result is the one it holds")
        #expect(got(holdsBoth, second).map(\.changes) == [[]], "it held both first results: its start, empty")
        #expect(hub.resuming.isEmpty, "both are released")
        let third = receive(&hub, ts: 300, wall: 7, [change(team, 1, hash: 0x11)])
        #expect(got(holdsBoth, third).map(\.changes) == [["0:7-11:5-10"]])
    }

    @Test func aMemberThatChangesWhileHeldBackIsSentOnceAgainstWhatTheClientHolds() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = try hub.attach(RecordingSink(), members: [.init(key: team, args: [:])], now: .zero)
        _ = receive(&hub, ts: 50, wall: 1, [change(team, 1, hash: 0x11)])
        // The client holds team 0x10 (older than this gateway's 0x11) and teams, which this gateway has no result for.
        let sink = RecordingSink()
        let (initial, _) = try hub.attach(
            sink, members: [.init(key: team, args: [:], held: 0x10), .init(key: teams, args: [:], held: 0x20)],
            now: .zero)
        #expect(initial == nil, "team's current result would mix with the teams the client holds")
        #expect(got(sink, receive(&hub, ts: 100, wall: 5, [change(team, 1, hash: 0x12)])).isEmpty)
        let second = receive(&hub, ts: 200, wall: 6, [change(team, 1, hash: 0x13), change(teams, 2, hash: 0x21)])
        #expect(got(sink, second).map(\.ts) == [200])
        #expect(
            got(sink, second).first?.changes == ["0:6-13:-", "1:6-21:-"],
            "team's latest, whole: the client holds none of this gateway's results")
    }

    @Test func streamsThatHoldNothingOrWhatIsHereAreNotHeldBack() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let fresh = RecordingSink()
        _ = try hub.attach(fresh, members: [.init(key: team, args: [:]), .init(key: teams, args: [:])], now: .zero)
        #expect(hub.resuming.isEmpty)
        let first = receive(&hub, ts: 100, wall: 5, [change(team, 1, hash: 0x11)])
        #expect(got(fresh, first).map(\.changes) == [["0:5-11:-"]])
        _ = receive(&hub, ts: 150, wall: 6, [change(teams, 2, hash: 0x21)])
        let (initial, _) = try hub.attach(
            RecordingSink(),
            members: [.init(key: team, args: [:], held: 0x10), .init(key: teams, args: [:], held: 0x21)], now: .zero)
        #expect(initial?.changes.map(\.member) == [0], "every member has a result here: at once")
        #expect(initial?.isFirst == true)
        let (holdsAll, _) = try hub.attach(
            RecordingSink(),
            members: [.init(key: team, args: [:], held: 0x11), .init(key: teams, args: [:], held: 0x21)], now: .zero)
        #expect(
            holdsAll?.isFirst == true && holdsAll?.changes.isEmpty == true,
            "a stream of several subscriptions gets its start even when it holds everything")
        let (alone, _) = try hub.attach(
            RecordingSink(), members: [.init(key: standings, args: [:], held: 0x30)], now: .zero)
        #expect(alone == nil && hub.resuming.isEmpty, "a stream of one subscription cannot mix snapshots")
    }

    @Test func aStreamThatLeavesOrEndsIsNotHeldAnyMore() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let leaves = RecordingSink(), ends = RecordingSink()
        let members: [HubState.Member] = [
            .init(key: team, args: [:], held: 0x10), .init(key: teams, args: [:], held: 0x20),
        ]
        _ = try hub.attach(leaves, members: members, now: .zero)
        _ = try hub.attach(ends, members: members, now: .zero)
        #expect(hub.resuming.count == 2)
        _ = hub.detach(ObjectIdentifier(leaves), members: [team, teams], now: .zero)
        #expect(hub.resuming.count == 1)
        let ended = hub.upstreamEnded(teams, entryID: 2)
        #expect(ended.contains { if case .end(let sinks) = $0 { sinks.contains { $0 === ends } } else { false } })
        #expect(hub.resuming.isEmpty)
        #expect(got(leaves, receive(&hub, ts: 100, wall: 5, [change(team, 1, hash: 0x11)])).isEmpty)
    }
}
