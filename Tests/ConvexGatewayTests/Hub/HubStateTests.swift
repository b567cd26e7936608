import ConvexSyncProtocol
import ConvexValues
import Testing

@testable import ConvexGateway

/// The hub's state machine on its own: events in, actions out, time passed in. No I/O, no tasks, no clock.
@Suite struct HubStateTests {
    let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "messages:list"), args: [:])
    let other = SubscriptionHub.Key(identity: "u1", function: try! UdfPath(parsing: "messages:list"), args: [:])

    /// What `actions` publish for the hot path, merged.
    func published(_ actions: [HubState.Action]) -> HubState.Publication {
        var all = HubState.Publication()
        for case .publish(let publication) in actions {
            all.versions += publication.versions
            all.retired += publication.retired
            all.session = publication.session ?? all.session
        }
        return all
    }

    func subscribed(_ actions: [HubState.Action]) -> [UInt64] {
        actions.compactMap { if case .subscribe(_, let entryID, _) = $0 { entryID } else { nil } }
    }

    func unsubscribed(_ actions: [HubState.Action]) -> [UInt64] {
        actions.compactMap { if case .unsubscribe(_, let entryID) = $0 { entryID } else { nil } }
    }

    /// Every stream's delivery: `.deliver` actions, and each stream of a `.fanOut`.
    func perStream(_ actions: [HubState.Action]) -> [(delivery: HubState.Delivery, sink: any EventSink)] {
        actions.flatMap { action -> [(delivery: HubState.Delivery, sink: any EventSink)] in
            switch action {
            case .deliver(let deliveries): deliveries.map { ($0.delivery, $0.sink) }
            case .fanOut(let fanOut): fanOut.sinks.compactMap { $0 }.map { (fanOut.delivery, $0) }
            default: []
            }
        }
    }

    /// The results delivered, each with the number of streams it went to.
    func delivered(_ actions: [HubState.Action]) -> [(CurrentResult, Int)] {
        var delivered: [(CurrentResult, Int)] = []
        for (delivery, _) in perStream(actions) {
            for change in delivery.changes {
                if let index = delivered.firstIndex(where: { $0.0.id == change.current.id }) {
                    delivered[index].1 += 1
                } else {
                    delivered.append((change.current, 1))
                }
            }
        }
        return delivered
    }

    /// The deliveries, per stream: the timestamp and the (member, result id) pairs.
    func deliveries(
        _ actions: [HubState.Action]
    ) -> [(sink: ObjectIdentifier, ts: ConvexTimestamp, changes: [String])] {
        perStream(actions).map { delivery, sink in
            (ObjectIdentifier(sink), delivery.ts, delivery.changes.map { "\($0.member):\($0.current.id)" })
        }
    }

    @Test func theFirstReaderSubscribesAndLaterReadersShare() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let (initial, actions) = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        #expect(initial == nil)
        #expect(subscribed(actions) == [1])
        let (_, again) = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        #expect(again.isEmpty)
        guard case .waiting(let waitActions) = hub.wait(7, for: key, args: [:], deadline: .seconds(60), now: .zero)
        else {
            Issue.record("a GET before the first result waits")
            return
        }
        #expect(subscribed(waitActions).isEmpty, "the entry is there: only the wait's deadline is armed")

        let actions2 = hub.receive(.value(1.0), hash: 11, key: key, entryID: 1, wallMilliseconds: 1000, now: .zero)
        #expect(delivered(actions2).map(\.1) == [2])
        #expect(delivered(actions2).first?.0.id == "1000-b")
        #expect(actions2.contains { if case .resume([7], _) = $0 { true } else { false } })
        // The same result again changes nothing; a result for an entry id that is not the current one is ignored
        // (only the connection's timestamp is published).
        let same = hub.receive(.value(1.0), hash: 11, key: key, entryID: 1, wallMilliseconds: 2000, now: .zero)
        let stale = hub.receive(.value(2.0), hash: 12, key: key, entryID: 0, wallMilliseconds: 2000, now: .zero)
        #expect(published(same).versions.isEmpty && delivered(same).isEmpty && same.count == 1)
        #expect(published(stale).versions.isEmpty && delivered(stale).isEmpty && stale.count == 1)
        // Event ids keep growing even if the wall clock steps back.
        let next = hub.receive(.value(2.0), hash: 12, key: key, entryID: 1, wallMilliseconds: 10, now: .zero)
        #expect(delivered(next).first?.0.id == "1001-c")
        // What the hot path reads is published by the owner, first of the actions: the state machine writes none of it.
        #expect(hub.entries[key]?.live.version == nil)
        guard case .publish(let publication) = next.first, publication.versions.map(\.version) == [1001],
            publication.versions.first?.live === hub.entries[key]?.live
        else {
            Issue.record("the new version is published before anything is delivered: \(next)")
            return
        }
        publication.carryOut()
        #expect(hub.entries[key]?.live.version == 1001, "what the hot path reads is the result's version")
    }

    @Test func aLastEventIDWithTheCurrentHashSkipsTheFirstEventOnly() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        _ = hub.receive(.value("a"), hash: 5, key: key, entryID: 1, wallMilliseconds: 1, now: .zero)
        #expect(try hub.attach(RecordingSink(), to: key, args: [:], held: 5, now: .zero).initial == nil)
        #expect(try hub.attach(RecordingSink(), to: key, args: [:], held: 6, now: .zero).initial?.id == "1-5")

        // Attached before any result: the first result is skipped only if it is the one the client has.
        var fresh = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = try fresh.attach(RecordingSink(), to: key, args: [:], held: 5, now: .zero)
        let skipped = fresh.receive(.value("a"), hash: 5, key: key, entryID: 1, wallMilliseconds: 1, now: .zero)
        #expect(delivered(skipped).isEmpty)
        let changed = fresh.receive(.value("b"), hash: 6, key: key, entryID: 1, wallMilliseconds: 2, now: .zero)
        #expect(delivered(changed).count == 1)
    }

    @Test func keepWarmCountsFromTheLastReaderAndTheLastRead() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let sink = RecordingSink()
        _ = try hub.attach(sink, to: key, args: [:], held: nil, now: .seconds(0))
        _ = hub.receive(.value(1.0), hash: 1, key: key, entryID: 1, wallMilliseconds: 1, now: .seconds(1))
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
        let (_, actions) = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .seconds(120))
        #expect(subscribed(actions) == [2])
    }

    @Test func aWaitThatTimesOutLeavesTheSubscriptionWarm() {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        guard case .waiting(let actions) = hub.wait(1, for: key, args: [:], deadline: .seconds(60), now: .zero) else {
            Issue.record("expected to wait")
            return
        }
        #expect(subscribed(actions) == [1])
        let stopped = !hub.waitEnded(1, now: .seconds(5)).isEmpty
        let stoppedTwice = !hub.waitEnded(1, now: .seconds(5)).isEmpty
        #expect(stopped && !stoppedTwice)
        #expect(hub.tick(now: .seconds(14)).isEmpty)
        #expect(unsubscribed(hub.tick(now: .seconds(15))) == [1])
    }

    @Test func theSubscriptionLimitRefusesNewKeysOnly() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 1, maxSubscriptionsPerCaller: 1)
        _ = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        guard case .full(.gateway) = hub.wait(2, for: other, args: [:], deadline: .seconds(60), now: .zero) else {
            Issue.record("a GET of a new key at the limit is refused at once")
            return
        }
        #expect(hub.entries[other] == nil, "a refused GET makes no subscription")
        #expect(hub.entries.values.allSatisfy { !$0.waiters.contains(2) }, "and keeps no wait")
        // The key that has the place is still read: a GET waits for its first result, a stream attaches.
        guard case .waiting(let actions) = hub.wait(3, for: key, args: [:], deadline: .seconds(60), now: .zero),
            subscribed(actions).isEmpty
        else {
            Issue.record("a GET of a subscribed key at the limit waits for its first result")
            return
        }
        _ = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        // A stream is refused before it is answered (its first results' wait, above), never as it attaches: one that
        // was admitted attaches even where its subscription expired meanwhile and the table filled.
        let (_, made) = try hub.attach(RecordingSink(), to: other, args: [:], held: nil, now: .zero)
        #expect(subscribed(made).count == 1 && hub.entries[other] != nil)
    }

    @Test func aCallerMakesItsShareOfTheTableOnly() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 2)
        let greedy = SubscriptionCaller(client: .address("10.0.0.1"))
        let polite = SubscriptionCaller(client: .address("10.0.0.2"))
        func key(_ n: Double) -> SubscriptionHub.Key {
            SubscriptionHub.Key(
                identity: "", function: try! UdfPath(parsing: "messages:list"), args: ["n": .float64(n)])
        }
        func member(_ n: Double) -> HubState.Member { HubState.Member(key: key(n), args: ["n": .float64(n)]) }

        // A stream of two subscriptions takes the greedy caller's whole share.
        let (_, made) = try hub.attach(RecordingSink(), members: [member(1), member(2)], caller: greedy, now: .zero)
        #expect(subscribed(made) == [1, 2])
        #expect(hub.table.charged[greedy] == 2)
        // It makes no more: its GET, or its stream's first results' wait, is answered at once (a GET's stage makes a
        // one-shot call instead; a stream is refused before it is answered).
        guard
            case .full(.caller) = hub.wait(
                1, for: key(3), args: ["n": 3.0], caller: greedy, deadline: .seconds(60), now: .zero)
        else {
            Issue.record("a GET of a new key over the caller's share is refused at once, naming the caller's limit")
            return
        }
        #expect(hub.entries[key(3)] == nil, "a refused GET makes no subscription")
        #expect(hub.entries.values.allSatisfy { !$0.waiters.contains(1) }, "and keeps no wait")
        // What is live it still reads: a GET waits for the first result, a stream attaches.
        guard
            case .waiting(let none) = hub.wait(
                2, for: key(1), args: ["n": 1.0], caller: greedy, deadline: .seconds(60), now: .zero),
            subscribed(none).isEmpty
        else {
            Issue.record("a GET of a live key over the caller's share waits for its first result")
            return
        }
        _ = try hub.attach(RecordingSink(), members: [member(2)], caller: greedy, now: .zero)

        // Another caller has its own share, and reading what the greedy one made costs it nothing.
        guard
            case .waiting(let other) = hub.wait(
                3, for: key(3), args: ["n": 3.0], caller: polite, deadline: .seconds(60), now: .zero)
        else {
            Issue.record("another caller's GET of a new key subscribes")
            return
        }
        #expect(subscribed(other) == [3])
        _ = try hub.attach(RecordingSink(), members: [member(1), member(2)], caller: polite, now: .zero)
        #expect(hub.table.charged[polite] == 1)
        #expect(hub.table.charged[greedy] == 2)

        // A subscription that ends gives its place back to its maker: its upstream ended…
        _ = hub.upstreamEnded(key(1), entryID: 1)
        #expect(hub.table.charged[greedy] == 1)
        guard
            case .waiting = hub.wait(
                4, for: key(4), args: ["n": 4.0], caller: greedy, deadline: .seconds(60), now: .zero)
        else {
            Issue.record("a place given back is the caller's again")
            return
        }
        #expect(hub.table.charged[greedy] == 2)
        // …or it expired, unread for the keep-warm period.
        _ = hub.waitEnded(4, now: .zero)
        #expect(unsubscribed(hub.tick(now: .seconds(10))) == [4])
        #expect(hub.table.charged[greedy] == 1)
        // Shutdown forgets every charge.
        _ = hub.shutdown()
        #expect(hub.table.charged.isEmpty)
    }

    @Test func anEndedUpstreamFinishesItsStreamsAndWaitersAndShutdownEndsEverything() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let sink = RecordingSink()
        _ = try hub.attach(sink, to: key, args: [:], held: nil, now: .zero)
        _ = hub.wait(3, for: key, args: [:], deadline: .seconds(60), now: .zero)
        let ended = hub.upstreamEnded(key, entryID: 1)
        #expect(ended.contains { if case .end(let sinks) = $0 { sinks.count == 1 } else { false } })
        #expect(ended.contains { if case .resume([3], nil) = $0 { true } else { false } })
        #expect(hub.entries.isEmpty)
        #expect(hub.upstreamEnded(key, entryID: 1).isEmpty)

        _ = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        _ = try hub.attach(RecordingSink(), to: other, args: [:], held: nil, now: .zero)
        let live = try #require(hub.entries[key]?.live)
        let shutdown = hub.shutdown()
        #expect(unsubscribed(shutdown).sorted() == [2, 3])
        #expect(live.version == nil)
        #expect(throws: SubscriptionHub.AttachError.shuttingDown) {
            try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        }
        guard case .shutDown = hub.wait(4, for: key, args: [:], deadline: .seconds(60), now: .zero) else {
            Issue.record("a GET after shutdown is refused at once")
            return
        }
    }

    // MARK: Read-your-writes

    func reached(_ actions: [HubState.Action]) -> [(waits: [UInt64], reached: Bool)] {
        actions.compactMap { if case .reached(let waits, let reached) = $0 { (waits.sorted(), reached) } else { nil } }
    }

    /// A caller waiting for an identity's results to reach a timestamp is answered by the transition that reaches it
    /// (after its deliveries), by the end of the identity's connection, by its deadline, or by shutdown.
    func waitFor(
        _ hub: inout HubState, _ wait: UInt64, identity: String, target: ConvexTimestamp, subscribed: Bool
    ) -> Bool? {
        switch hub.waitForTimestamp(
            wait, identity: identity, target: target, subscribed: subscribed, deadline: .seconds(60))
        {
        case .answered(let reached): reached
        case .waiting: nil
        }
    }

    @Test func timestampWaitsEndWithTheTransitionThatReachesThemTheConnectionOrTheDeadline() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        #expect(waitFor(&hub, 1, identity: "", target: 50, subscribed: false) == true, "no subscription")
        _ = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        _ = try hub.attach(RecordingSink(), to: other, args: [:], held: nil, now: .zero)
        #expect(waitFor(&hub, 2, identity: "", target: 50, subscribed: true) == nil)
        #expect(waitFor(&hub, 3, identity: "", target: 90, subscribed: true) == nil)
        #expect(waitFor(&hub, 4, identity: "u1", target: 50, subscribed: true) == nil)
        #expect(waitFor(&hub, 5, identity: "u1", target: 60, subscribed: true) == nil)

        let first = hub.receive(
            ts: 60, identity: "", changes: [change(key, 1, .value(1), hash: 1)], wallMilliseconds: 1, now: .zero)
        #expect(reached(first).map(\.waits) == [[2]] && reached(first).map(\.reached) == [true])
        // The wait ends after the deliveries (only its deadline's cancelling comes later).
        let lastWake = first.last { if case .cancelDeadlines = $0 { false } else { true } }
        if case .reached = lastWake {} else { Issue.record("the wait ends after the deliveries: \(first)") }
        #expect(reached(hub.receive(ts: 70, identity: "", changes: [], wallMilliseconds: 1, now: .zero)).isEmpty)
        #expect(waitFor(&hub, 6, identity: "", target: 70, subscribed: true) == true, "reached already")

        let stopped = !hub.waitEnded(3, now: .zero).isEmpty
        let stoppedAgain = !hub.waitEnded(3, now: .zero).isEmpty
        #expect(stopped && !stoppedAgain, "a wait ends once")
        let ended = hub.connectionEnded(identity: "u1", members: [(other, 2)])
        #expect(reached(ended).map(\.waits) == [[4, 5]] && reached(ended).map(\.reached) == [false])
        #expect(ended.contains { if case .end = $0 { true } else { false } })

        #expect(waitFor(&hub, 7, identity: "", target: 100, subscribed: true) == nil)
        let shutdown = hub.shutdown()
        #expect(reached(shutdown).map(\.waits) == [[7]] && reached(shutdown).map(\.reached) == [false])
        #expect(waitFor(&hub, 8, identity: "", target: 100, subscribed: true) == false)
    }

    // MARK: Transitions

    let team = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "mlb:first_place_team"), args: [:])
    let teams = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "mlb:teams"), args: [:])

    func change(_ key: SubscriptionHub.Key, _ entryID: UInt64, _ result: UpstreamResult, hash: ContentHash)
        -> HubState.EntryResult
    {
        HubState.EntryResult(key: key, entryID: entryID, result: result, hash: hash)
    }

    /// Streams whose only subscription changed share one action and one delivery, however many there are; a stream of
    /// several subscriptions gets its own.
    @Test func aChangeReachesSingleSubscriptionStreamsAsOneFanOut() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let alone = (0..<100).map { _ in RecordingSink() }
        for sink in alone { _ = try hub.attach(sink, members: [.init(key: teams, args: [:])], now: .zero) }
        let both = RecordingSink()
        _ = try hub.attach(both, members: [.init(key: team, args: [:]), .init(key: teams, args: [:])], now: .zero)
        let actions = hub.receive(
            ts: 100, identity: "", changes: [change(teams, 1, .value("T1"), hash: 0x21)], wallMilliseconds: 5,
            now: .zero)
        let fanOuts = actions.compactMap { if case .fanOut(let fanOut) = $0 { fanOut } else { nil } }
        #expect(fanOuts.count == 1)
        #expect(fanOuts.first?.sinks.map { $0.map(ObjectIdentifier.init) } == alone.map(ObjectIdentifier.init))
        #expect(fanOuts.first?.delivery.changes.map(\.member) == [0])
        #expect(deliveries(actions).count == 101)
        #expect(deliveries(actions).first { $0.sink == ObjectIdentifier(both) }?.changes == ["1:5-21"])
    }

    /// A change goes to single-subscription streams in the order they attached (the order their connections were
    /// accepted), also after some left and others came.
    @Test func aChangeFansOutInTheOrderStreamsAttached() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        var streams = (0..<150).map { _ in RecordingSink() }
        for sink in streams { _ = try hub.attach(sink, to: key, args: [:], held: nil, now: .zero) }
        for (index, sink) in streams.enumerated() where index % 3 != 1 {
            let left = hub.detach(ObjectIdentifier(sink), from: key, now: .zero)
            let leftAgain = hub.detach(ObjectIdentifier(sink), from: key, now: .zero)
            #expect(left && !leftAgain)
        }
        streams = streams.enumerated().filter { $0.offset % 3 == 1 }.map(\.element)
        let later = (0..<3).map { _ in RecordingSink() }
        for sink in later { _ = try hub.attach(sink, to: key, args: [:], held: nil, now: .zero) }
        let actions = hub.receive(.value(1.0), hash: 1, key: key, entryID: 1, wallMilliseconds: 1, now: .zero)
        #expect(perStream(actions).map { ObjectIdentifier($0.sink) } == (streams + later).map(ObjectIdentifier.init))

        // When every stream has left, the subscription is idle (it counts from then for keep-warm).
        let allLeft = (streams + later).allSatisfy { hub.detach(ObjectIdentifier($0), from: key, now: .seconds(1)) }
        #expect(allLeft)
        #expect(hub.entries[key]?.idleSince == .seconds(1))
    }

    /// A single-subscription stream that resumed before the first result (with the hash of the result it holds) joins
    /// the fan-out with its first result: after it when the result is the one it holds, with it otherwise.
    @Test func aResumedStreamJoinsTheFanOutWithItsFirstResult() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let holdsFirst = RecordingSink(), fresh = RecordingSink(), holdsOther = RecordingSink()
        _ = try hub.attach(holdsFirst, to: key, args: [:], held: 5, now: .zero)
        _ = try hub.attach(fresh, to: key, args: [:], held: nil, now: .zero)
        _ = try hub.attach(holdsOther, to: key, args: [:], held: 9, now: .zero)
        let first = hub.receive(.value("a"), hash: 5, key: key, entryID: 1, wallMilliseconds: 1, now: .zero)
        #expect(
            Set(perStream(first).map { ObjectIdentifier($0.sink) }) == [
                ObjectIdentifier(fresh), ObjectIdentifier(holdsOther),
            ])
        let second = hub.receive(.value("b"), hash: 6, key: key, entryID: 1, wallMilliseconds: 2, now: .zero)
        #expect(
            perStream(second).map { ObjectIdentifier($0.sink) }
                == [fresh, holdsOther, holdsFirst].map(ObjectIdentifier.init))
        #expect(hub.entries[key]?.attachments.isEmpty == true)
        let allLeft = [holdsFirst, fresh, holdsOther].allSatisfy {
            hub.detach(ObjectIdentifier($0), from: key, now: .zero)
        }
        #expect(allLeft)
    }

    @Test func theChangesOfOneTransitionReachEachStreamAsOneDelivery() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let both = RecordingSink(), onlyTeams = RecordingSink()
        _ = try hub.attach(
            both, members: [.init(key: team, args: [:]), .init(key: teams, args: [:]), .init(key: key, args: [:])],
            now: .zero)
        _ = try hub.attach(onlyTeams, members: [.init(key: teams, args: [:])], now: .zero)
        // Entry ids: team 1, teams 2, key 3.
        let first = hub.receive(
            ts: 100, identity: "",
            changes: [change(teams, 2, .value("T1"), hash: 0x21), change(team, 1, .value("A"), hash: 0x11)],
            wallMilliseconds: 5, now: .zero)
        let streams = deliveries(first)
        #expect(streams.count == 2, "one delivery per stream, not per change")
        #expect(streams.first { $0.sink == ObjectIdentifier(both) }?.changes == ["0:5-11", "1:5-21"])
        #expect(streams.first { $0.sink == ObjectIdentifier(both) }?.ts == 100)
        #expect(streams.first { $0.sink == ObjectIdentifier(onlyTeams) }?.changes == ["0:5-21"])

        // A transition that changes only what a stream does not read sends it nothing; unchanged results are left out.
        let second = hub.receive(
            ts: 200, identity: "",
            changes: [change(team, 1, .value("A"), hash: 0x11), change(teams, 2, .value("T2"), hash: 0x22)],
            wallMilliseconds: 6, now: .zero)
        #expect(deliveries(second).first { $0.sink == ObjectIdentifier(both) }?.changes == ["1:6-22"])
        #expect(deliveries(second).first { $0.sink == ObjectIdentifier(onlyTeams) }?.changes == ["0:6-22"])
        #expect(deliveries(second).allSatisfy { $0.ts == 200 })
    }

    @Test func aLateJoinerJoinsInTheTransitionThatCarriesItsResult() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let early = RecordingSink()
        _ = try hub.attach(early, members: [.init(key: team, args: [:])], now: .zero)
        _ = hub.receive(
            ts: 100, identity: "", changes: [change(team, 1, .value("A"), hash: 0x11)], wallMilliseconds: 1,
            now: .zero)
        // A stream of `team` (held) and `teams` (not yet subscribed upstream).
        let late = RecordingSink()
        let (initial, actions) = try hub.attach(
            late, members: [.init(key: team, args: [:]), .init(key: teams, args: [:])], now: .zero)
        #expect(subscribed(actions) == [2])
        #expect(initial?.ts == 100, "the first delivery is the snapshot the connection is at")
        #expect(initial?.changes.map(\.member) == [0], "teams has no result yet")
        // The transition that adds `teams` to the upstream set also changes `team`: both arrive together.
        let joined = hub.receive(
            ts: 150, identity: "",
            changes: [change(team, 1, .value("B"), hash: 0x12), change(teams, 2, .value("T"), hash: 0x21)],
            wallMilliseconds: 2, now: .zero)
        let lateDelivery = deliveries(joined).first { $0.sink == ObjectIdentifier(late) }
        #expect(lateDelivery?.changes == ["0:2-12", "1:2-21"])
        #expect(lateDelivery?.ts == 150)
        #expect(deliveries(joined).first { $0.sink == ObjectIdentifier(early) }?.changes == ["0:2-12"])
    }

    @Test func anErrorInTheMiddleOfATransitionStaysWithItsSubscription() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        let sink = RecordingSink()
        _ = try hub.attach(
            sink, members: [.init(key: team, args: [:]), .init(key: teams, args: [:]), .init(key: key, args: [:])],
            now: .zero)
        let actions = hub.receive(
            ts: 7, identity: "",
            changes: [
                change(team, 1, .value("A"), hash: 1),
                change(teams, 2, .failure(.functionFailed(message: "boom")), hash: 2),
                change(key, 3, .value("C"), hash: 3),
            ], wallMilliseconds: 1, now: .zero)
        guard case .deliver(let batch)? = actions.first(where: { if case .deliver = $0 { true } else { false } }),
            let delivery = batch.first?.delivery
        else {
            Issue.record("no delivery")
            return
        }
        #expect(deliveries(actions).count == 1)
        #expect(delivery.changes.map(\.member) == [0, 1, 2])
        #expect(delivery.changes[1].current.result == .failure(.functionFailed(message: "boom")))
        #expect(hub.entries[key]?.current?.hash == 3, "the changes after the failure are applied too")
    }

    @Test func aResumedStreamGetsOnlyWhatChangedSinceWhatItHolds() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = try hub.attach(
            RecordingSink(), members: [.init(key: team, args: [:]), .init(key: teams, args: [:])], now: .zero)
        _ = hub.receive(
            ts: 1, identity: "",
            changes: [change(team, 1, .value("A"), hash: 0x11), change(teams, 2, .value("T"), hash: 0x21)],
            wallMilliseconds: 1, now: .zero)
        let (initial, _) = try hub.attach(
            RecordingSink(),
            members: [.init(key: team, args: [:], held: 0x11), .init(key: teams, args: [:], held: 0x20)],
            now: .zero)
        #expect(initial?.changes.map(\.member) == [1])
        let (none, _) = try hub.attach(
            RecordingSink(),
            members: [.init(key: team, args: [:], held: 0x11), .init(key: teams, args: [:], held: 0x21)],
            now: .zero)
        #expect(none?.changes.isEmpty == true && none?.isFirst == true, "nothing to send but the stream's start")
    }
}

extension HubState {
    /// A one-subscription stream attaching, as `/subscribe/<function>` does.
    mutating func attach(
        _ sink: any EventSink, to key: Key, args: ConvexValue, held: ContentHash?, now: Duration
    ) throws(SubscriptionHub.AttachError) -> (initial: CurrentResult?, actions: [Action]) {
        let (initial, actions) = try attach(sink, members: [Member(key: key, args: args, held: held)], now: now)
        return (initial?.changes.first?.current, actions)
    }

    mutating func detach(_ sink: ObjectIdentifier, from key: Key, now: Duration) -> Bool {
        detach(sink, members: [key], now: now)
    }

    /// A transition that changes `key` alone.
    mutating func receive(
        _ result: UpstreamResult, hash: ContentHash, key: Key, entryID: UInt64, wallMilliseconds: UInt64,
        now: Duration
    ) -> [Action] {
        receive(
            ts: 0, identity: key.identity,
            changes: [EntryResult(key: key, entryID: entryID, result: result, hash: hash)],
            wallMilliseconds: wallMilliseconds, now: now)
    }
}
