import Clocks
import ConvexSyncProtocol
import ConvexValues
import Testing

@testable import ConvexGateway

/// A first result that never comes because the deployment refused the connection's credentials is answered as that
/// refusal (401), not as a timeout: the connection's query set ends when the refusal arrives, and a member added as it
/// ends gets no result (the race that once answered an expired token's GET with 504 in a full test run).
@Suite struct RefusedFirstResultTests {
    let key = SubscriptionHub.Key(identity: "", function: try! UdfPath(parsing: "conformance:whoami"), args: [:])

    /// A connection whose query sets have ended before any member's result, refused (or not) by the deployment.
    struct EndedUpstream: ConvexUpstream {
        let refused: Bool
        func makeQuerySet() -> any UpstreamQuerySet { EndedQuerySet() }
        func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration)
            async throws(UpstreamFailure) -> UpstreamAnswer
        { throw .unavailable("not in this test") }
        func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp { .zero }
        var isConnected: Bool { !refused }
        func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) {
            if refused { throw .unauthenticated("Token expired") }
        }
        func close() async {}
    }

    @Test func aRefusedConnectionsMissingFirstResultIsItsRefusal() async {
        let hub = ReadYourWritesTests.hub(clock: TestClock())
        let upstream = EndedUpstream(refused: true)
        let first = await hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(30))
        #expect(first.read == nil)
        let error = await hub.noFirstResult(first, timeout: .seconds(30), upstream: upstream)
        #expect(error.code == .unauthenticated && error.message.contains("expired"), "\(error)")
    }

    @Test func anotherMissingFirstResultIsATimeout() async {
        let hub = ReadYourWritesTests.hub(clock: TestClock())
        let upstream = EndedUpstream(refused: false)
        let first = await hub.firstResult(for: key, args: [:], upstream: upstream, timeout: .seconds(30))
        let error = await hub.noFirstResult(first, timeout: .seconds(30), upstream: upstream)
        #expect(error.code == .upstreamTimeout, "\(error)")
    }
}
