import ConvexLocal
import ConvexValues
import Foundation
import Synchronization
import Testing

@testable import Convex

/// A token provider minting unsigned tokens that live `lifetime` seconds (the local deployment without an auth
/// config takes unsigned tokens but enforces their `exp`), and recording how it was asked. After `tokens` calls it
/// answers `nil`.
final class ShortTokenProvider: Sendable {
    let lifetime: Int
    let tokens: Int
    private let calls = Mutex<[Bool]>([])

    init(lifetime: Int, tokens: Int = .max) {
        self.lifetime = lifetime
        self.tokens = tokens
    }

    /// The `forceRefresh` argument of every call so far.
    var forceRefreshes: [Bool] { calls.withLock { $0 } }

    func token(forceRefresh: Bool) -> String? {
        let count = calls.withLock { calls in
            calls.append(forceRefresh)
            return calls.count
        }
        guard count <= tokens else { return nil }
        // Real time: the real-time suite (CONVEX_TEST_REAL_TIME, run alone on a quiet machine): tokens expire by the wall clock.
        let now = Int(Date().timeIntervalSince1970)
        return makeJWT(#"{"sub":"user-1","iss":"https://issuer.test","iat":\#(now),"exp":\#(now + lifetime)}"#)
    }
}

/// Values collected by concurrent tasks.
final class Recorded<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var all: [Element] { items.withLock { $0 } }
}

/// Real time on 3 s tokens leaves a refresh window of 1.5 s, which a machine busy with the rest of the suite (thousands
/// of sockets in the hostile-input tests) can stall through; `scripts/test` therefore runs this suite on its own after
/// the parallel run, with `CONVEX_TEST_REAL_TIME=1`.
@Suite(
    .serialized, .timeLimit(.minutes(1)),
    .enabled(if: ProcessInfo.processInfo.environment["CONVEX_TEST_REAL_TIME"] == "1", "run alone by scripts/test"))
struct TokenRefreshTests {
    /// 20 s of a live subscription on 3 s tokens: the client refreshes ahead of every expiry on the same socket, so
    /// the deployment never sees an expired identity and the subscriber sees every change and no error.
    @Test func subscriptionOutlivesManyShortLivedTokens() async throws {
        try await withClientAndDeployment { client, deployment in
            let provider = ShortTokenProvider(lifetime: 3)
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
            await eventually("both subscriptions have their first result") {
                !values.all.isEmpty && !subjects.all.isEmpty
            }
            // Real time: the real-time suite; the writes are spread over 20 s so that several refreshes fall between them.
            let start = ContinuousClock.now
            // In step: each change is seen before the next write, so "every change" does not depend on how fast the
            // reader runs on a busy machine (a subscription coalesces a slow reader to the latest value).
            for written in 1...writes {
                // Real time: a real-time suite; the tokens expire by the wall clock, and the writes are spread over
                // 20 s so that several refreshes fall between them.
                try await Task.sleep(for: .milliseconds(250))
                _ = try deployment.mutation("conformance:increment", ["name": "refresh"])
                await eventually("change \(written) delivered") { values.all.last == .int64(Int64(written)) }
            }
            await reader.value
            let elapsed = ContinuousClock.now - start

            #expect(elapsed >= .seconds(20))
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
        try await withClientAndDeployment { client, _ in
            // Installing and connecting get a token; the first refresh gets nothing.
            let provider = ShortTokenProvider(lifetime: 3, tokens: 2)
            try await client.setAuthProvider { provider.token(forceRefresh: $0) }
            var whoami = client.subscribe(to: "conformance:whoami").results.makeAsyncIterator()
            guard case .success(let first)? = await whoami.next() else { Issue.record("no first result"); return }
            #expect(first["identity"]?["subject"] == "user-1")
            guard case .failure(let error)? = await whoami.next() else {
                Issue.record("the subscription must fail"); return
            }
            #expect(error.code == .authenticationFailed)
            #expect(client.connectionState == .authenticationFailed(message: "Token provider returned no token"))
        }
    }

    /// A static token (no provider) is not refreshed: at its `exp` the deployment's AuthError ends the client in
    /// `authenticationFailed`, and every subscriber gets that error, until new credentials arrive.
    @Test func staticTokenExpirySurfacesAsAuthenticationFailed() async throws {
        try await withClientAndDeployment { client, _ in
            // Real time: the real-time suite; a static token that expires by the wall clock.
            let now = Int(Date().timeIntervalSince1970)
            client.setAuth(token: makeJWT(#"{"sub":"static","iss":"https://i","iat":\#(now),"exp":\#(now + 2)}"#))
            var whoami = client.subscribe(to: "conformance:whoami").results.makeAsyncIterator()
            guard case .success(let first)? = await whoami.next() else { Issue.record("no first result"); return }
            #expect(first["identity"]?["subject"] == "static")
            guard case .failure(let error)? = await whoami.next() else {
                Issue.record("the subscription must fail"); return
            }
            #expect(error.code == .authenticationFailed && error.message == "Convex token identity expired")
            #expect(client.connectionState == .authenticationFailed(message: "Convex token identity expired"))
            client.setAuth(token: makeJWT(#"{"sub":"static","iss":"https://i","exp":\#(now + 600)}"#))
            guard case .success(let again)? = await whoami.next() else {
                Issue.record("new credentials resume"); return
            }
            #expect(again["identity"]?["subject"] == "static")
        }
    }
}
