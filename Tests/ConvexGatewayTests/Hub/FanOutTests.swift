import Clocks
import ConvexSyncProtocol
import ConvexValues
import Logging
import Testing

@testable import ConvexGateway

/// A change that reaches many streams is split between threads (SubscriptionHub+FanOut.swift): every stream still gets
/// it once, rendered in its own mode, and a stream's changes stay in order.
@Suite(.timeLimit(.minutes(5))) struct FanOutTests {
    let function = try! UdfPath(parsing: "messages:list")

    /// A hub splitting its deliveries between two threads, rendering a value with its mode's name in front.
    func makeHub() -> SubscriptionHub {
        SubscriptionHub(
            keepWarm: .milliseconds(100), maxSubscriptions: 100, maxSubscriptionsPerCaller: 100,
            metrics: GatewayMetrics(),
            logger: Logger(label: "test"), clock: GatewayClock(TestClock()), fanOutThreads: 2
        ) { value, format in Array("\(format.rawValue) ".utf8) + value.convexJSON() }
    }

    @Test func streamsInMixedModesEachGetEveryChangeOnceInTheirMode() async throws {
        let hub = makeHub()
        let upstream = ScriptedUpstream()
        let key = SubscriptionHub.Key(identity: "", function: function, args: [:])
        // More streams than one slice takes, the first in the mode made first, the others interleaved.
        let sinks = (0..<900).map { RecordingSink(format: $0 % 3 == 1 ? .plain : .encoded) }
        for sink in sinks { try hub.attach(sink, to: key, args: [:], upstream: upstream, held: nil) }
        await waitUntil { upstream.activeCount == 1 }
        for value in 1...3 { upstream.push(.value(.float64(Double(value)))) }
        // Generous: the suite runs beside 600 other tests, and a fan-out on half a core shared with a build took over 10 s.
        await waitUntil(timeout: .seconds(40)) { sinks.allSatisfy { $0.transitions.count == 3 } }
        for sink in sinks {
            let bodies = sink.transitions.map { String(decoding: $0.changes[0].update.body, as: UTF8.self) }
            #expect(bodies == (1...3).map { "\(sink.format.rawValue) \(Double($0))" })
        }
        for sink in sinks { hub.detach(sink, from: key) }
    }

    @Test func streamsOfSeveralSubscriptionsGetTheirTransitionsInOrder() async throws {
        let hub = makeHub()
        let upstream = ScriptedUpstream()
        let first = SubscriptionHub.Key(identity: "", function: function, args: ["n": 1.0])
        let second = SubscriptionHub.Key(identity: "", function: function, args: ["n": 2.0])
        let members = [
            SubscriptionHub.Member(key: first, args: ["n": 1.0]), SubscriptionHub.Member(key: second, args: ["n": 2.0]),
        ]
        let sinks = (0..<700).map { _ in RecordingSink() }
        for sink in sinks { try hub.attach(sink, members: members, upstream: upstream) }
        await waitUntil { upstream.activeCount == 2 }
        for value in 1...4 { upstream.push(.value(.float64(Double(value)))) }
        await waitUntil(timeout: .seconds(40)) {
            sinks.allSatisfy { $0.transitions.last?.changes.first?.update.body == Array("encoded 4.0".utf8) }
        }
        for sink in sinks {
            let timestamps = sink.transitions.map(\.ts)
            #expect(timestamps == timestamps.sorted(), "in the order of the upstream's transitions")
        }
        for sink in sinks { hub.detach(sink, members: [first, second]) }
    }
}
