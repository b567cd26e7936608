import Clocks
import Convex
import ConvexSyncProtocol
import ConvexValues
import Synchronization
import TestSupport
import Testing

/// Call deadlines read the injected clock: a test advances through them instead of sleeping.
@Suite(.timeLimit(.minutes(5)))
struct CallDeadlineTests {
    @Test func aCallGivenItsOwnDeadlineIgnoresTheConfiguredOneAndTimesOutAtIts() async throws {
        let clock = TestClock<Duration>()
        var configuration = ConvexClientConfiguration(callTimeout: .seconds(60))
        configuration.clock = ElapsedClock(clock)
        // The socket watchdog reads the same clock: moving it past the deadlines must not also mean a silent server.
        configuration.inactivityTimeout = .seconds(3600)
        // No WebSocket pings of the client's own: they are timed on this clock, which moves faster than a pong
        // travels on a loaded machine.
        configuration.pingInterval = nil
        // A deployment that never answers.
        try await ScriptedSyncServer.with(script: { _, _, _ in }) { url, server in
            try await ConvexClient.withClient(deploymentUrl: url, configuration: configuration) {
                (client) async throws in
                let outcome = Mutex<Result<ConvexValue, ConvexClientError>?>(nil)
                let call = Task {
                    do throws(ConvexClientError) {
                        let value = try await client.action("slow:run", timeout: .seconds(90))
                        outcome.withLock { $0 = .success(value) }
                    } catch {
                        outcome.withLock { $0 = .failure(error) }
                    }
                }
                // The clock moves 10 ms at a time meanwhile (at most 12 s, well inside the call's 90 s, over as long in
                // real time as the wait below), so a connect retried after its backoff on a loaded machine finds the
                // clock still moving for as long as the test waits for the action.
                let reached = try await clock.advance(by: .zero, thenBy: .milliseconds(10), moves: 1200) {
                    await TestSupport.eventually {
                        server.receivedMessages.contains { if case .action = $0.message { true } else { false } }
                    }
                }
                #expect(reached, "the action reached the deployment, so its deadline is set")
                guard reached else { return call.cancel() }
                await clock.advance(by: .seconds(61))
                #expect(outcome.withLock { $0 } == nil, "past the configured 60 s, within the call's 90 s")
                // The deadline's timer may start its sleep a moment after a move: small moves after the 30 s reach it,
                // and the wait is bounded, never an unbounded await of the call.
                let ended = try await clock.advance(by: .seconds(30), thenBy: .milliseconds(10), moves: 100) {
                    await TestSupport.eventually { outcome.withLock { $0 } != nil }
                }
                #expect(ended, "the call ended at its deadline")
                guard case .failure(let error)? = outcome.withLock({ $0 }) else {
                    let seen = String(describing: outcome.withLock { $0 })
                    Issue.record("the call did not fail at its deadline: \(seen)")
                    return
                }
                #expect(error.code == .timeout, "\(error)")
                #expect(error.message.contains("it was sent, so it may have run"), "\(error.message)")
            }
        }
    }
}
