import Clocks
import ConvexValues
import Synchronization
import TestSupport
import Testing

@testable import Convex

/// The socket watchdog end to end, on a test clock the test moves (SocketWatchdog.swift has the rules): a silent
/// server and an unanswered ping each drop the socket, and answered pings keep it.
@Suite(.timeLimit(.minutes(5)))
struct ClientLivenessTests {
    static func configuration(
        _ clock: TestClock<Duration>, inactivity: Duration = .seconds(3600), ping: Duration? = nil
    ) -> ConvexClientConfiguration {
        var configuration = ConvexClientConfiguration(
            callTimeout: .seconds(3600), inactivityTimeout: inactivity, connectTimeout: .seconds(3600),
            pingInterval: ping)
        configuration.clock = ElapsedClock(clock)
        return configuration
    }

    /// The reason of the first reconnect `states` show.
    static func firstReconnect(_ states: AsyncStream<ConnectionState>) async -> String? {
        for await state in states {
            if case .reconnecting(let why) = state { return why }
        }
        return nil
    }

    @Test func aStalledServerIsDroppedForInactivityAndTheClientReconnects() async throws {
        let clock = TestClock<Duration>()
        let configuration = Self.configuration(clock, inactivity: .seconds(30))
        try await withClientAndDeployment(configuration: configuration) { client, deployment in
            var counter = client.subscribe(to: "conformance:counter", with: ["name": "stall"]).makeAsyncIterator()
            #expect(try await counter.next() == .int64(0))
            let states = client.connectionStates
            deployment.setStalled(true)
            await clock.advance(by: .seconds(29))
            #expect(client.isConnected, "dropped before the inactivity timeout")
            let reason = try await clock.advance(by: .seconds(2)) { await Self.firstReconnect(states) }
            #expect(reason == "InactiveServer")
            deployment.setStalled(false)
            _ = try deployment.mutation("conformance:increment", ["name": "stall"])
            // The reconnect waits out its backoff on the test clock: it moves on while the test waits.
            let mover = Task {
                while !Task.isCancelled {
                    // Real time: lets the reconnect run between moves.
                    try? await Task.sleep(for: .milliseconds(20))
                    await clock.advance(by: .milliseconds(100))
                }
            }
            defer { mover.cancel() }
            #expect(try await counter.next() == .int64(1))
        }
    }

    @Test func answeredPingsKeepTheSocket() async throws {
        let clock = TestClock<Duration>()
        let configuration = Self.configuration(clock, ping: .seconds(10))
        try await withClientAndDeployment(configuration: configuration) { client, _ in
            try await client.waitUntilConnected()
            let activity = try #require(client.core.state.withLock { $0.activity })
            for round in 1...3 {
                await clock.advance(by: .seconds(10))
                let answered = await TestSupport.eventually {
                    let snapshot = activity.snapshot
                    return snapshot.lastPing != nil && !snapshot.awaitingPong
                        && snapshot.lastPing! >= snapshot.openedAt! + .seconds(10 * round)
                }
                #expect(answered, "ping \(round) was not sent or not answered")
            }
            #expect(client.socketsOpened == 1)
            #expect(client.isConnected)
        }
    }

    @Test func aServerThatStopsAnsweringPingsIsDropped() async throws {
        let clock = TestClock<Duration>()
        let configuration = Self.configuration(clock, ping: .seconds(10))
        // The first socket's server stops reading after the handshake's first message, so it answers no ping; later
        // sockets are read (and their pings answered) as usual.
        try await ScriptedSyncServer.with(script: { socket, _, _ in
            // Real time: holds the first socket unread until the server stops at the test's end.
            if socket == 0 { try await Task.sleep(for: .seconds(3600)) }
        }) { url, server in
            try await ConvexClient.withClient(deploymentUrl: url, configuration: configuration) { client in
                let states = client.connectionStates
                try await client.waitUntilConnected()
                #expect(await TestSupport.eventually { !server.receivedMessages.isEmpty })
                let activity = try #require(client.core.state.withLock { $0.activity })
                await clock.advance(by: .seconds(10))
                #expect(await TestSupport.eventually { activity.snapshot.awaitingPong }, "no ping was sent")
                await clock.advance(by: .seconds(9))
                #expect(client.isConnected, "dropped before the next ping was due")
                let reason = try await clock.advance(by: .seconds(1)) { await Self.firstReconnect(states) }
                #expect(reason == "PongTimeout: no answer to a WebSocket ping within 10.0 seconds")
            }
        }
    }
}
