import Clocks
import ConvexSyncProtocol
import ConvexValues
import Synchronization
import Testing

@testable import ConvexGateway

/// Read-your-writes without I/O: the snapshot-floor rule, the commit watermark, the hub's per-connection timestamp, and
/// the hub moving a connection that lags behind a commit (against a scripted upstream that behaves as the Convex
/// backend does: a connection's timestamp moves only when one of its queries changes, or when it asks).
@Suite(.timeLimit(.minutes(5)))
struct ReadYourWritesTests {
    @Test func theFloorIsTheNewestCommitAndTheCallersMinimum() {
        #expect(SnapshotFloor.required(minTimestamp: nil, lastCommit: 0, readYourWrites: true) == 0)
        #expect(SnapshotFloor.required(minTimestamp: nil, lastCommit: 70, readYourWrites: true) == 70)
        #expect(SnapshotFloor.required(minTimestamp: 90, lastCommit: 70, readYourWrites: true) == 90)
        #expect(SnapshotFloor.required(minTimestamp: 50, lastCommit: 70, readYourWrites: true) == 70)
        #expect(SnapshotFloor.required(minTimestamp: nil, lastCommit: 70, readYourWrites: false) == 0)
        #expect(SnapshotFloor.required(minTimestamp: 50, lastCommit: 70, readYourWrites: false) == 50)
    }

    @Test(arguments: [
        ("1795538336812318803", UInt64(1_795_538_336_812_318_803)), ("0", 0), (" 42 ", 42),
        ("9223372036854775807", UInt64(Int64.max)),
    ])
    func aMinimumTimestampIsDecimalNanoseconds(text: String, value: UInt64) throws {
        #expect(try SnapshotFloor.minTimestamp(text) == ConvexTimestamp(nanoseconds: value))
    }

    @Test(arguments: ["", " ", "abc", "-1", "+5", "1.5", "1e9", "9223372036854775808", "99999999999999999999", "0x10"])
    func aMalformedMinimumIsRefused(text: String) {
        #expect(throws: GatewayError.self) { try SnapshotFloor.minTimestamp(text) }
        do {
            _ = try SnapshotFloor.minTimestamp(text)
        } catch {
            #expect(error.status == 400)
            #expect(error.code == .invalidTimestamp)
            #expect(error.message.contains("Convex-Min-Timestamp"))
        }
    }

    @Test func noHeaderIsNoMinimum() throws {
        #expect(try SnapshotFloor.minTimestamp(nil) == nil)
    }

    @Test func theWatermarkKeepsTheNewestCommit() async {
        let watermark = CommitWatermark()
        #expect(watermark.ts == 0)
        await withTaskGroup(of: Void.self) { group in
            for ts in (1...200).shuffled() {
                group.addTask { watermark.committed(ConvexTimestamp(nanoseconds: UInt64(ts))) }
            }
        }
        #expect(watermark.ts == 200)
        watermark.committed(3)
        #expect(watermark.ts == 200)
    }

    // MARK: The hub's timestamp per connection

    let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "messages:list"), args: [:])

    @Test func aTransitionThatChangesNothingStillMovesTheConnectionsTimestamp() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        _ = try hub.attach(RecordingSink(), to: key, args: [:], held: nil, now: .zero)
        _ = hub.receive(
            ts: 5, identity: "", changes: [entryResult(key, 1, .value(1.0), 11)], wallMilliseconds: 1, now: .zero)
        #expect(hub.current(key)?.ts == 5)
        let actions = hub.receive(ts: 9, identity: "", changes: [], wallMilliseconds: 2, now: .zero)
        guard actions.count == 1, case .publish(let publication) = actions[0], publication.versions.isEmpty,
            let session = publication.session, session.ts == 9
        else {
            Issue.record("nothing to deliver, only the timestamp to publish: \(actions)")
            return
        }
        #expect(hub.timestamp(of: "") == 9)
        #expect(hub.current(key)?.ts == 9, "the result holds at the new snapshot")
        #expect(hub.timestamp(of: "u1") == 0, "another connection is not moved")
    }

    @Test func aWaitingGetIsWokenWithTheTimestampOfItsFirstResult() throws {
        var hub = HubState(keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10)
        guard case .waiting = hub.wait(7, for: key, args: [:], deadline: .seconds(60), now: .zero) else {
            Issue.record("a GET before the first result waits")
            return
        }
        let actions = hub.receive(
            ts: 12, identity: "", changes: [entryResult(key, 1, .value(1.0), 11)], wallMilliseconds: 1, now: .zero)
        let woken = actions.compactMap { action -> ConvexTimestamp? in
            if case .resume([7], let read?) = action { read.ts } else { nil }
        }
        #expect(woken == [12])
        guard case .ready(let read) = hub.wait(8, for: key, args: [:], deadline: .seconds(60), now: .zero) else {
            Issue.record("a GET after the first result is answered at once")
            return
        }
        #expect(read.ts == 12)
    }

    private func entryResult(
        _ key: SubscriptionHub.Key, _ entryID: UInt64, _ result: UpstreamResult, _ hash: ContentHash
    ) -> HubState.EntryResult {
        HubState.EntryResult(key: key, entryID: entryID, result: result, hash: hash)
    }

    // MARK: Moving a connection that lags

    static func hub(clock: TestClock<Duration>) -> SubscriptionHub {
        SubscriptionHub(
            keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10, metrics: GatewayMetrics(),
            logger: quietLogger,
            clock: GatewayClock(clock)
        ) { value, _ in value.convexJSON() }
    }

    @Test func aConnectionBehindACommitIsAskedToMoveAndTheHubFollows() async throws {
        let hub = Self.hub(clock: TestClock())
        let upstream = ScriptedUpstream()
        async let first = hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(5))
        await waitUntil { upstream.activeCount == 1 }
        upstream.push(.value(.int64(1)))
        #expect(try #require(await first.read).ts == 1)
        // A commit elsewhere that changes none of this connection's queries: no transition reaches it.
        let commit = try await upstream.call(.mutation, "other:write", args: [:], timeout: .seconds(5)).ts ?? 0
        #expect(commit == 2)
        #expect(hub.sessionTimestamp(of: "") == 1)
        #expect(await hub.reach(commit, identity: "", upstream: upstream, timeout: .seconds(5)))
        #expect(upstream.viewRequests == 1)
        #expect(hub.sessionTimestamp(of: "") == 2)
        #expect(hub.currentBody(for: key, format: .plain)?.ts == 2)
        // Already there: no second ask.
        #expect(await hub.reach(2, identity: "", upstream: upstream, timeout: .seconds(5)))
        #expect(upstream.viewRequests == 1)
    }

    @Test func aTimestampTheDeploymentNeverReachesIsNotReached() async throws {
        let clock = TestClock()
        let hub = Self.hub(clock: clock)
        let upstream = ScriptedUpstream()
        async let first = hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(5))
        await waitUntil { upstream.activeCount == 1 }
        upstream.push(.value(.int64(1)))
        _ = try #require(await first.read)
        #expect(await hub.reach(1_000, identity: "", upstream: upstream, timeout: .seconds(5)) == false)
        #expect(hub.sessionTimestamp(of: "") == 1)
    }
}

/// The hub's waits end at their deadline whenever it falls: even when it has passed before the wait is registered.
@Suite(.timeLimit(.minutes(5))) struct HubDeadlineTests {
    let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "messages:list"), args: [:])

    /// A connection whose view reaches any timestamp asked for, after the whole timeout, with no transition.
    final class SlowViewUpstream: ConvexUpstream {
        let inner = ScriptedUpstream()
        let clock: TestClock<Duration>
        init(clock: TestClock<Duration>) { self.clock = clock }
        func makeQuerySet() -> any UpstreamQuerySet { inner.makeQuerySet() }
        func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration)
            async throws(UpstreamFailure) -> UpstreamAnswer
        { try await inner.call(kind, function, args: args, timeout: timeout) }
        func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp {
            await clock.advance(by: timeout + .seconds(1))
            return ts
        }
        var isConnected: Bool { inner.isConnected }
        func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) {
            try await inner.waitUntilConnected(timeout: timeout)
        }
        func close() async { await inner.close() }
    }

    @Test func aFirstResultWithNoTimeLeftIsNil() async {
        let hub = ReadYourWritesTests.hub(clock: TestClock())
        let upstream = ScriptedUpstream()
        for _ in 0..<20 {
            #expect(await hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .zero).read == nil)
        }
    }

    @Test func aTimestampReachedOnlyAfterTheDeadlineIsNotWaitedForForever() async throws {
        let clock = TestClock()
        let hub = ReadYourWritesTests.hub(clock: clock)
        let upstream = SlowViewUpstream(clock: clock)
        async let first = hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(5))
        await waitUntil { upstream.inner.activeCount == 1 }
        upstream.inner.push(.value(.int64(1)))
        _ = try #require(await first.read)
        // The connection says it reached 1,000 only once the deadline has passed, and no transition brings the hub
        // there: the wait ends at once, unreached.
        #expect(await hub.reach(1_000, identity: "", upstream: upstream, timeout: .seconds(5)) == false)
    }
}
