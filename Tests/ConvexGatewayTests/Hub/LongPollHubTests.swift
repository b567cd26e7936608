import Clocks
import ConvexSyncProtocol
import ConvexValues
import Logging
import Testing

@testable import ConvexGateway

/// The hub's side of the long-poll `GET` (`SubscriptionHub.nextChange`), against a scripted upstream and a test clock.
@Suite(.timeLimit(.minutes(5))) struct LongPollHubTests {
    let clock = TestClock<Duration>()
    let upstream = ScriptedUpstream()
    let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "messages:list"), args: [:])

    func makeHub() -> SubscriptionHub {
        SubscriptionHub(
            keepWarm: .seconds(10), maxSubscriptions: 10, maxSubscriptionsPerCaller: 10, metrics: GatewayMetrics(),
            logger: Logger(label: "test"),
            clock: GatewayClock(clock)
        ) { value, _ in value.convexJSON() }
    }

    /// A hub whose subscription holds `value`, and that value's hash.
    func hub(holding value: ConvexValue) async throws -> (SubscriptionHub, ContentHash) {
        let hub = makeHub()
        let sink = RecordingSink()
        try hub.attach(sink, to: key, args: [:], upstream: upstream, held: nil)
        await waitUntil { upstream.activeCount == 1 }
        upstream.push(.value(value))
        await waitUntil { sink.received.count == 1 }
        hub.detach(sink, from: key)
        return (hub, try #require(hub.currentBody(for: key, format: .plain)?.current.hash))
    }

    func wait(_ hub: SubscriptionHub, from hash: ContentHash, seconds: Int64) -> Task<SubscriptionUpdate?, Never> {
        Task { [key, upstream] in
            await hub.nextChange(
                of: [SubscriptionHub.Member(key: key, args: [:], held: hash)], upstream: upstream, format: .plain,
                timeout: .seconds(seconds))?.update
        }
    }

    @Test func theFirstDifferentValueEndsTheWait() async throws {
        let (hub, hash) = try await hub(holding: "a")
        let waiting = wait(hub, from: hash, seconds: 30)
        await waitUntil { hub.attachmentCount == 1 }
        upstream.push(.value("a"))  // the same value again: no change
        upstream.push(.value("b"))
        let update = await waiting.value
        #expect(update?.body == Array(#""b""#.utf8))
        #expect(hub.attachmentCount == 0)
    }

    @Test func aClientBehindTheValueGetsTheCurrentOneAtOnce() async throws {
        let (hub, _) = try await hub(holding: "a")
        let update = await wait(hub, from: 0x1234, seconds: 30).value
        #expect(update?.body == Array(#""a""#.utf8))
        #expect(hub.attachmentCount == 0)
    }

    @Test func theWaitEndsOnTheClock() async throws {
        let (hub, hash) = try await hub(holding: "a")
        let waiting = wait(hub, from: hash, seconds: 5)
        await waitUntil { hub.attachmentCount == 1 }
        await clock.advance(by: .seconds(4))
        #expect(hub.attachmentCount == 1)
        await clock.advance(by: .seconds(1))
        #expect(await waiting.value == nil)
        #expect(hub.attachmentCount == 0)
        #expect(hub.subscriptionCount == 1, "the subscription stays warm after its last reader")
    }

    @Test func theEndOfTheSubscriptionOrShutdownEndsTheWait() async throws {
        let (hub, hash) = try await hub(holding: "a")
        let waiting = wait(hub, from: hash, seconds: 30)
        await waitUntil { hub.attachmentCount == 1 }
        upstream.endAll()
        #expect(await waiting.value == nil)

        let (other, otherHash) = try await self.hub(holding: "c")
        let second = wait(other, from: otherHash, seconds: 30)
        await waitUntil { other.attachmentCount == 1 }
        other.shutdown()
        #expect(await second.value == nil)
        #expect(await wait(other, from: otherHash, seconds: 30).value == nil, "after shutdown a wait ends at once")
    }
}
