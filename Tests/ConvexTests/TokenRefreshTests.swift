import Clocks
import ConvexLocal
import ConvexValues
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Convex

/// A token provider minting unsigned tokens that live `lifetime` seconds of `clock`'s wall time (the local deployment
/// without an auth config takes unsigned tokens but enforces their `exp`), and recording how it was asked. After
/// `refreshes` forced refreshes it answers `nil` to the next one (a connect, or a reconnect after a connect that timed
/// out on a loaded machine, still gets a token).
final class ShortTokenProvider: Sendable {
    let lifetime: Int
    let refreshes: Int
    let clock: ElapsedClock
    private let calls = Mutex<(forceRefreshes: [Bool], latestExpiration: Double?)>(([], nil))

    init(lifetime: Int, refreshes: Int = .max, clock: ElapsedClock) {
        self.lifetime = lifetime
        self.refreshes = refreshes
        self.clock = clock
    }

    /// The `forceRefresh` argument of every call so far.
    var forceRefreshes: [Bool] { calls.withLock { $0.forceRefreshes } }
    /// The `exp` of the latest token minted.
    var latestExpiration: Double? { calls.withLock { $0.latestExpiration } }

    func token(forceRefresh: Bool) -> String? {
        let now = Int(clock.wallSeconds)
        let minted = calls.withLock { calls -> Bool in
            calls.forceRefreshes.append(forceRefresh)
            guard !forceRefresh || calls.forceRefreshes.filter({ $0 }).count <= refreshes else { return false }
            calls.latestExpiration = Double(now + lifetime)
            return true
        }
        guard minted else { return nil }
        return makeJWT(#"{"sub":"user-1","iss":"https://issuer.test","iat":\#(now),"exp":\#(now + lifetime)}"#)
    }
}

/// Values collected by concurrent tasks.
final class Recorded<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var all: [Element] { items.withLock { $0 } }
}

/// Token refresh and expiry on a test clock that the client and the deployment share: the test moves it, so a token's
/// `exp`, the client's refresh ahead of it and the deployment's expiry happen when the test says, however busy the
/// machine.
@Suite(.timeLimit(.minutes(5)))
struct TokenRefreshTests {
    /// The client's configuration on `clock`. The socket watchdog reads the same clock: moving it must not also mean a
    /// silent server.
    static func configuration(_ clock: ElapsedClock) -> ConvexClientConfiguration {
        var configuration = ConvexClientConfiguration(callTimeout: .seconds(20))
        configuration.clock = clock
        configuration.inactivityTimeout = .seconds(3600)
        // Generous: the clock moves while a test waits for the first result, and a connect on a loaded machine can
        // take seconds.
        configuration.connectTimeout = .seconds(600)
        // No WebSocket pings of the client's own: they are timed on this clock, which moves faster than a pong
        // travels on a loaded machine.
        configuration.pingInterval = nil
        return configuration
    }

    /// Waits for `condition` while the clock moves 50 ms at a time, so that what the client does on its own meanwhile
    /// goes on (a connect that failed on a loaded machine is retried after a backoff on this clock).
    static func waitMoving(
        _ clock: TestClock<Duration>, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable () -> Bool
    ) async throws {
        let held = try await clock.advance(by: .zero, thenBy: .milliseconds(50)) {
            await TestSupport.eventually(timeout: .seconds(90)) { condition() }
        }
        if !held { Issue.record("gave up waiting until \(what)", sourceLocation: sourceLocation) }
    }

    /// Every result of `results`, recorded as it comes (the reading task ends with the test's client).
    static func collect(_ results: ConvexSubscription<ConvexValue>.Results) -> Recorded<
        ConvexSubscription<ConvexValue>.Results.Element
    > {
        let recorded = Recorded<ConvexSubscription<ConvexValue>.Results.Element>()
        Task { for await result in results { recorded.append(result) } }
        return recorded
    }

    /// Returns once `results` holds a failure, or after a generous bound (on half a core the whole suite can hold
    /// the test process for seconds).
    static func failure(in results: Recorded<ConvexSubscription<ConvexValue>.Results.Element>) async -> Bool {
        await TestSupport.eventually(timeout: .seconds(90)) {
            results.all.contains { if case .failure = $0 { true } else { false } }
        }
    }

    /// When the clock has passed the moment the client refreshes the latest token (10 s before its `exp`, with 10 ms
    /// to spare for the plan's rounding), waits until that refresh is done: a new token minted, the deployment's
    /// confirmation, and the next refresh planned.
    static func waitForDueRefresh(_ client: ConvexClient, _ provider: ShortTokenProvider, _ clock: ElapsedClock) async {
        guard let expiration = provider.latestExpiration, clock.wallSeconds >= expiration - 10 + 0.01 else { return }
        await eventually("the refresh due 10 s before \(expiration) is confirmed") {
            (provider.latestExpiration ?? 0) > expiration
                && client.core.state.withLock { $0.sync.refreshPlannedFor == $0.sync.identityVersion }
        }
    }

    /// 400 s of a live subscription on 60 s tokens: the client refreshes ahead of every expiry on the same socket, so
    /// the deployment never sees an expired identity and the subscriber sees every change and no error.
    @Test func subscriptionOutlivesManyShortLivedTokens() async throws {
        let clock = TestClock<Duration>()
        let time = ElapsedClock(clock)
        try await withClientAndDeployment(configuration: Self.configuration(time), clock: time) { client, deployment in
            let provider = ShortTokenProvider(lifetime: 60, clock: time)
            try await client.setAuthProvider { provider.token(forceRefresh: $0) }
            let states = Recorded<ConnectionState>()
            let watcher = Task {
                for await state in client.connectionStates { states.append(state) }
            }
            defer { watcher.cancel() }

            let writes = 80
            let counter = client.subscribe(to: "conformance:counter", with: ["name": "refresh"]).results
            let whoami = client.subscribe(to: "conformance:whoami").results
            let values = Recorded<ConvexValue>()
            let errors = Recorded<String>()
            let subjects = Recorded<ConvexValue>()
            let reader = Task {
                for await result in counter {
                    switch result {
                    case .success(let value): values.append(value)
                    case .failure(let error): errors.append("counter: \(error)")
                    }
                    if values.all.last == .int64(Int64(writes)) { break }
                }
            }
            let identities = Task {
                for await result in whoami {
                    switch result {
                    case .success(let value): subjects.append(value["identity"]?["subject"] ?? .null)
                    case .failure(let error): errors.append("whoami: \(error)")
                    }
                }
            }
            defer { identities.cancel() }
            try await Self.waitMoving(clock, "both subscriptions have their first result") {
                !values.all.isEmpty && !subjects.all.isEmpty
            }
            // In step: each change is seen before the next write, so "every change" does not depend on how fast the
            // reader runs on a busy machine (a subscription coalesces a slow reader to the latest value). A write every
            // 5 s of the clock, which moves a second at a time and stops whenever a refresh is due until it is
            // confirmed: the deployment never sees a token past its `exp`, however slow the machine.
            for written in 1...writes {
                for _ in 0..<5 {
                    await clock.advance(by: .seconds(1))
                    await Self.waitForDueRefresh(client, provider, time)
                }
                _ = try deployment.mutation("conformance:increment", ["name": "refresh"])
                await eventually("change \(written) delivered") { values.all.last == .int64(Int64(written)) }
            }
            await reader.value
            #expect(errors.all.isEmpty, "\(errors.all)")
            #expect(values.all == (0...writes).map { .int64(Int64($0)) }, "every change, in order, once")
            #expect(subjects.all.allSatisfy { $0 == "user-1" }, "\(subjects.all)")
            let refreshes = provider.forceRefreshes.dropFirst(2)
            #expect(refreshes.count >= 6, "refreshed ahead of expiry: \(provider.forceRefreshes)")
            #expect(refreshes.allSatisfy { $0 }, "refreshes force a fresh token")
            #expect(deployment.acceptedSyncConnections == 1, "one socket throughout")
            #expect(client.socketsOpened == 1)
            let seenStates = states.all
            #expect(seenStates.allSatisfy { $0 == .connected || $0 == .connecting || $0 == .idle }, "\(seenStates)")
        }
    }

    @Test func providerWithNothingAtRefreshFailsAuthentication() async throws {
        let clock = TestClock<Duration>()
        let time = ElapsedClock(clock)
        try await withClientAndDeployment(configuration: Self.configuration(time), clock: time) { client, _ in
            // Installing and connecting get a token; the first refresh, 10 s before its `exp`, gets nothing.
            let provider = ShortTokenProvider(lifetime: 60, refreshes: 0, clock: time)
            try await client.setAuthProvider { provider.token(forceRefresh: $0) }
            let whoami = Self.collect(client.subscribe(to: "conformance:whoami").results)
            try await Self.waitMoving(clock, "the first result") { !whoami.all.isEmpty }
            guard case .success(let first)? = whoami.all.first else { Issue.record("no first result"); return }
            #expect(first["identity"]?["subject"] == "user-1")
            // To 9 s before `exp`, past the refresh (10 s before), then by small steps that stay short of `exp`.
            let expiration = try #require(provider.latestExpiration)
            let failed = try await clock.advance(
                by: .seconds(expiration - 9 - time.wallSeconds), thenBy: .milliseconds(10)
            ) {
                await Self.failure(in: whoami)
            }
            #expect(failed, "a failure came")
            guard case .failure(let error)? = whoami.all.dropFirst().first else {
                Issue.record("the subscription must fail: \(whoami.all)"); return
            }
            #expect(error.code == .authenticationFailed)
            #expect(client.connectionState == .authenticationFailed(message: "Token provider returned no token"))
        }
    }

    /// A static token (no provider) is not refreshed: at its `exp` the deployment's AuthError ends the client in
    /// `authenticationFailed`, and every subscriber gets that error, until new credentials arrive.
    @Test func staticTokenExpirySurfacesAsAuthenticationFailed() async throws {
        let clock = TestClock<Duration>()
        let time = ElapsedClock(clock)
        try await withClientAndDeployment(configuration: Self.configuration(time), clock: time) { client, _ in
            let now = Int(time.wallSeconds)
            client.setAuth(token: makeJWT(#"{"sub":"static","iss":"https://i","iat":\#(now),"exp":\#(now + 60)}"#))
            let whoami = Self.collect(client.subscribe(to: "conformance:whoami").results)
            try await Self.waitMoving(clock, "the first result") { !whoami.all.isEmpty }
            guard case .success(let first)? = whoami.all.first else { Issue.record("no first result"); return }
            #expect(first["identity"]?["subject"] == "static")
            let failed = try await clock.advance(by: .seconds(Double(now + 60) - time.wallSeconds)) {
                await Self.failure(in: whoami)
            }
            #expect(failed, "a failure came")
            guard case .failure(let error)? = whoami.all.dropFirst().first else {
                Issue.record("the subscription must fail: \(whoami.all)"); return
            }
            #expect(error.code == .authenticationFailed && error.message == "Convex token identity expired")
            #expect(client.connectionState == .authenticationFailed(message: "Convex token identity expired"))
            // Fresh from the clock's time now, which the moves above took past the first token's `exp`.
            let later = Int(time.wallSeconds)
            client.setAuth(token: makeJWT(#"{"sub":"static","iss":"https://i","iat":\#(later),"exp":\#(later + 600)}"#))
            try await Self.waitMoving(clock, "new credentials resume") { whoami.all.count >= 3 }
            guard case .success(let again)? = whoami.all.dropFirst(2).first else {
                Issue.record("new credentials resume: \(whoami.all)"); return
            }
            #expect(again["identity"]?["subject"] == "static")
        }
    }
}
