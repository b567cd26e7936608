import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Convex

// End-to-end tests of ConvexClient against the embedded local deployment over a real WebSocket on 127.0.0.1.

/// Runs `body` with a deployment on a free port and a client of it; both are always torn down.
func withClientAndDeployment<R: Sendable>(
    adminKey: String? = nil,
    // Generous deadlines: on a loaded machine a socket can take longer than the default 10 s to open, and a call
    // longer than 20 s. No pings of the client's own: a pong can come more than 10 s late there too, and liveness is
    // tested on a test clock (ClientLivenessTests).
    configuration: ConvexClientConfiguration = .init(
        callTimeout: .seconds(60), connectTimeout: .seconds(60), pingInterval: nil),
    clock: ElapsedClock = .continuous,
    _ body: (ConvexClient, LocalDeployment) async throws -> R
) async throws -> R {
    try await withLocalDeployment(.init(port: 0, adminKey: adminKey, clock: clock)) { deployment in
        try await ConvexClient.withClient(deploymentUrl: deployment.url, configuration: configuration) { client in
            try await body(client, deployment)
        }
    }
}

/// A syntactically valid unsigned JWT with these claims (the local deployment does not verify signatures).
func makeJWT(_ claims: String) -> String {
    func b64url(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    return "\(b64url(#"{"alg":"none","typ":"JWT"}"#)).\(b64url(claims)).c2ln"
}

/// Waits until `condition` holds, polling; fails the test after `timeout`.
func eventually(
    _ what: String, timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async rethrows {
    // Real time: a poll for something that has no event to await, bounded generously by `timeout`.
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        // Real time between polls: what is polled (the deployment's sockets, the client's state) has no event to await.
        guard (try? await Task.sleep(for: .milliseconds(20))) != nil else { break }
    }
    if try await condition() { return }
    Issue.record("Timed out waiting until \(what): gave up after \(timeout)", sourceLocation: sourceLocation)
}

extension ConvexClient {
    /// Upstream queries in the client's query set (white-box check of sharing and removal).
    var upstreamQueryCount: Int { core.state.withLock { $0.sync.queries.count } }
    /// Sockets this client has opened.
    var socketsOpened: UInt32 { core.state.withLock { $0.sync.connectionCount } }
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientCallTests {
    @Test func queryReturnsTheDeploymentsValue() async throws {
        try await withClientAndDeployment { client, _ in
            let team = try await client.query("mlb:first_place_team", with: ["division": "AL Central"])
            guard case .string = team["name"], case .int64 = team["wins"], case .array = team["uniformColors"] else {
                Issue.record("unexpected team shape: \(team)")
                return
            }
            #expect(client.connectionState == .connected)
        }
    }

    @Test func connectsToAnIPv6Literal() async throws {
        // A bracketed IPv6 address in the deployment URL reaches the deployment on ::1.
        try await withLocalDeployment(.init(host: "::1", port: 0)) { deployment in
            try await ConvexClient.withClient(deploymentUrl: "http://[::1]:\(deployment.port)") { client in
                let team = try await client.query("mlb:first_place_team", with: ["division": "AL Central"])
                #expect(team["name"] == "Guardians")
            }
        }
    }

    @Test func connectsLazily() async throws {
        try await withClientAndDeployment { client, deployment in
            // Real time: that nothing connects before the first call is seen only over a window; no event marks a
            // connection that is not made.
            try await Task.sleep(for: .milliseconds(200))
            #expect(client.connectionState == .idle)
            #expect(deployment.syncConnectionCount == 0)
            try await client.waitUntilConnected()
            #expect(client.isConnected)
            await eventually("the deployment sees the socket") { deployment.syncConnectionCount == 1 }
        }
    }

    @Test func mutationIsVisibleToTheNextQuery() async throws {
        try await withClientAndDeployment { client, _ in
            for expected in Int64(1)...5 {
                let result = try await client.mutation("conformance:increment", with: ["name": "ryw"])
                #expect(result == .int64(expected))
                // Read-your-writes: the query right after the mutation sees it.
                #expect(try await client.query("conformance:counter", with: ["name": "ryw"]) == .int64(expected))
            }
        }
    }

    @Test func voidMutationAndAction() async throws {
        try await withClientAndDeployment { client, _ in
            try await client.mutation("messages:send", with: ["body": "hello", "channel": "void"])
            try await client.action("conformance:sleep", with: ["ms": 1.0])
            let messages = try await client.query("messages:list", with: ["channel": "void"])
            #expect(messages[0]?["body"] == "hello")
        }
    }

    @Test func actionReturnsItsResult() async throws {
        try await withClientAndDeployment { (client, _) async throws in
            #expect(try await client.action("conformance:add", with: ["a": 1.5, "b": 2.0]) == 3.5)
        }
    }

    @Test func everyValueTypeRoundTrips() async throws {
        let args: [String: ConvexValue] = [
            "null": nil, "int": .int64(-9_007_199_254_740_993), "float": 1.5, "nan": .float64(.nan),
            "negzero": .float64(-0.0), "inf": .float64(.infinity), "bool": true, "string": "xé\u{1}",
            "bytes": .bytes(Data([0, 1, 255])), "array": [1.0, "a", [nil]], "object": ["k": ["deep": .int64(2)]],
        ]
        try await withClientAndDeployment { (client, _) async throws in
            #expect(try await client.query("echo:echo", with: args) == .object(args))
            #expect(try await client.mutation("echo:echoMutation", with: args) == .object(args))
            #expect(try await client.action("echo:echoAction", with: args) == .object(args))
        }
    }

    @Test func functionErrorsAreTyped() async throws {
        try await withClientAndDeployment { (client, _) async throws in
            let convexError = await #expect(throws: ConvexClientError.self) {
                try await client.query("conformance:convexErrorQuery")
            }
            #expect(convexError?.code == .convexError)
            #expect(convexError?.data == ["code": "NOPE", "n": .int64(42)])

            let mutationError = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("conformance:convexError", with: ["data": ["why": "because"]])
            }
            #expect(mutationError?.code == .convexError)
            #expect(mutationError?.data == ["why": "because"])

            let actionError = await #expect(throws: ConvexClientError.self) {
                try await client.action("conformance:convexErrorAction")
            }
            #expect(actionError?.code == .convexError)
            #expect(actionError?.data == "action says no")

            let plain = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("conformance:plainError")
            }
            #expect(plain?.code == .functionFailed)
            #expect(plain?.message.contains("boom") == true)
            #expect(plain?.data == nil)

            let unknown = await #expect(throws: ConvexClientError.self) {
                try await client.query("nowhere:nothing")
            }
            #expect(unknown?.code == .unknownFunction)

            let unknownMutation = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("nowhere:nothing")
            }
            #expect(unknownMutation?.code == .unknownFunction)

            let invalid = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("messages:send", with: ["body": 12.0])
            }
            #expect(invalid?.code == .invalidArguments)
            #expect(invalid?.functionPath == "messages:send")

            // The client is still healthy after all of these.
            #expect(try await client.action("conformance:add", with: ["a": 1.0, "b": 1.0]) == 2.0)
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientSubscriptionTests {
    @Test func subscriptionDeliversCurrentValueThenChanges() async throws {
        try await withClientAndDeployment { client, _ in
            var iterator = client.subscribe(to: "messages:list", with: ["channel": "live"]).makeAsyncIterator()
            #expect(try await iterator.next() == [])
            try await client.mutation("messages:send", with: ["body": "one", "channel": "live"])
            let after = try await iterator.next()
            #expect(after?[0]?["body"] == "one")
        }
    }

    @Test func identicalSubscriptionsShareOneUpstreamQueryAndEndingUnsubscribes() async throws {
        try await withClientAndDeployment { client, _ in
            let subscription = client.subscribe(to: "conformance:counter", with: ["name": "shared"])
            var first = subscription.makeAsyncIterator()
            var second = client.subscribe(to: "conformance:counter", with: ["name": "shared"]).makeAsyncIterator()
            #expect(try await first.next() == .int64(0))
            #expect(try await second.next() == .int64(0))
            #expect(client.upstreamQueryCount == 1)

            try await client.mutation("conformance:increment", with: ["name": "shared"])
            #expect(try await first.next() == .int64(1))
            #expect(try await second.next() == .int64(1))

            // A `for await` that breaks ends its subscriber; the query stays while the other iterator lives.
            for try await value in subscription {
                #expect(value == .int64(1))
                break
            }
            #expect(client.upstreamQueryCount == 1)
            first = client.subscribe(to: "other:none").makeAsyncIterator()  // drops the first iterator
            _ = first
            #expect(client.upstreamQueryCount >= 1)
            second = client.subscribe(to: "other:none").makeAsyncIterator()  // drops the last shared iterator
            _ = second
            await eventually("the shared query is removed") {
                client.core.state.withLock { state in
                    !state.sync.queries.values.contains { $0.udfPath == "conformance:counter" }
                }
            }
        }
    }

    @Test func cancellingTheIteratingTaskUnsubscribes() async throws {
        try await withClientAndDeployment { client, _ in
            let started = OneShot<Void>()
            let task = Task {
                for try await _ in client.subscribe(to: "conformance:counter", with: ["name": "cancel"]) {
                    started.complete(())
                }
            }
            await started.wait()
            #expect(client.upstreamQueryCount == 1)
            task.cancel()
            _ = try? await task.value
            await eventually("the query is removed") { client.upstreamQueryCount == 0 }
        }
    }

    @Test func failingQuerySurvivesAndRecoversWithoutDisturbingOthers() async throws {
        try await withClientAndDeployment { client, _ in
            var failing = client.subscribe(to: "conformance:failing").results.makeAsyncIterator()
            var other = client.subscribe(to: "conformance:counter", with: ["name": "bystander"]).makeAsyncIterator()
            #expect(try await failing.next()?.get() == "ok")
            #expect(try await other.next() == .int64(0))

            try await client.mutation("conformance:setFailing", with: ["fail": true])
            guard case .failure(let error)? = await failing.next() else {
                Issue.record("expected a failure element")
                return
            }
            #expect(error.code == .functionFailed)
            #expect(error.message.contains("failing on demand"))

            try await client.mutation("conformance:setFailing", with: ["fail": false])
            #expect(try await failing.next()?.get() == "ok")

            try await client.mutation("conformance:increment", with: ["name": "bystander"])
            #expect(try await other.next() == .int64(1))
        }
    }

    @Test func throwingIterationEndsAtTheFirstError() async throws {
        try await withClientAndDeployment { client, _ in
            let error = await #expect(throws: ConvexClientError.self) {
                for try await _ in client.subscribe(to: "conformance:convexErrorQuery") {}
            }
            #expect(error?.code == .convexError)
            await eventually("the query is removed") { client.upstreamQueryCount == 0 }
        }
    }

    @Test func thousandLiveSubscriptions() async throws {
        try await withClientAndDeployment { client, _ in
            let count = 1000
            var iterators = (0..<count).map {
                client.subscribe(to: "conformance:counter", with: ["name": .string("n\($0)")]).makeAsyncIterator()
            }
            for i in 0..<count {
                #expect(try await iterators[i].next() == .int64(0))
            }
            #expect(client.upstreamQueryCount == count)
            // One change reaches exactly its own subscriber.
            try await client.mutation("conformance:increment", with: ["name": "n500"])
            #expect(try await iterators[500].next() == .int64(1))
            try await client.mutation("conformance:increment", with: ["name": "n7"])
            #expect(try await iterators[7].next() == .int64(1))
            iterators.removeAll()
            await eventually("all queries are removed") { client.upstreamQueryCount == 0 }
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientReconnectTests {
    @Test func thousandConcurrentMutationsCompleteExactlyOnce() async throws {
        // A generous call deadline: a thousand mutations queued at once on half a core take longer than 20 s, and
        // what is checked is exactly once, not how fast.
        try await withClientAndDeployment(
            configuration: .init(callTimeout: .seconds(120), connectTimeout: .seconds(60))
        ) { client, deployment in
            let results = try await withThrowingTaskGroup(of: ConvexValue.self) { group in
                for _ in 0..<1000 {
                    group.addTask { try await client.mutation("conformance:increment", with: ["name": "bulk"]) }
                }
                var all: [ConvexValue] = []
                for try await value in group { all.append(value) }
                return all
            }
            // Each increment saw a distinct count: none lost, none doubled.
            #expect(Set(results) == Set((1...1000).map { ConvexValue.int64(Int64($0)) }))
            #expect(try deployment.query("conformance:counter", ["name": "bulk"]) == .int64(1000))
        }
    }

    @Test func serverClosingSocketsMidMutationsAppliesEachExactlyOnce() async throws {
        // Eight closes in a row would back off for seconds under the default cap; what is tested is that every
        // mutation is applied once across them, not the backoff.
        let configuration = ConvexClientConfiguration(
            callTimeout: .seconds(20), connectTimeout: .seconds(60), maxBackoff: .milliseconds(100))
        try await withClientAndDeployment(configuration: configuration) { client, deployment in
            let total = 300
            let batches = 8
            let results = try await withThrowingTaskGroup(of: ConvexValue.self) { group in
                // The mutations start in batches, and once the client has a socket open the server closes it right
                // after each batch starts: each close lands while that batch is in flight or still to be sent, and
                // the later batches need a new socket. (A closer on a timer could fire before the client's first
                // socket was open on a busy machine, and then close nothing.)
                for batch in 0..<batches {
                    for _ in (batch * total / batches)..<((batch + 1) * total / batches) {
                        group.addTask { try await client.mutation("conformance:increment", with: ["name": "closing"]) }
                    }
                    await eventually("batch \(batch) has a socket") { deployment.syncConnectionCount > 0 }
                    let accepted = deployment.acceptedSyncConnections
                    deployment.closeSyncConnections()
                    // The next batch starts once the closed socket is gone, or the client has already opened another.
                    await eventually("the socket closed under batch \(batch) is gone") {
                        deployment.syncConnectionCount == 0 || deployment.acceptedSyncConnections > accepted
                    }
                }
                var all: [ConvexValue] = []
                for try await value in group { all.append(value) }
                return all
            }
            #expect(Set(results).count == total)
            #expect(try deployment.query("conformance:counter", ["name": "closing"]) == .int64(Int64(total)))
            #expect(client.socketsOpened > 1)
        }
    }

    @Test func inFlightActionFailsWithConnectionLost() async throws {
        try await withClientAndDeployment { client, deployment in
            try await client.waitUntilConnected()
            async let slow: ConvexValue = client.action("conformance:sleep", with: ["ms": 2000.0])
            // Once the action is on the socket, a lost connection fails it: it may have run.
            await eventually("the action is sent") {
                client.core.state.withLock { l in
                    l.sync.requests.values.contains { $0.kind == .action && $0.status == .sent }
                }
            }
            // The client counts as connected once its handshake is answered, which can be before the deployment's
            // handler has registered the socket (on a loaded machine, long before): a close now would close nothing.
            await eventually("the deployment holds the socket") { deployment.syncConnectionCount == 1 }
            deployment.closeSyncConnections()
            do {
                _ = try await slow
                Issue.record("the action should fail")
            } catch let error as ConvexClientError {
                #expect(error.code == .connectionLost)
            }
            // The client reconnects and works.
            #expect(try await client.action("conformance:add", with: ["a": 2.0, "b": 2.0]) == 4.0)
        }
    }

    @Test func subscriptionsResumeWithFreshValuesAfterServerRestart() async throws {
        try await withClientAndDeployment { client, deployment in
            var counter = client.subscribe(to: "conformance:counter", with: ["name": "restart"]).makeAsyncIterator()
            #expect(try await counter.next() == .int64(0))
            let states = client.connectionStates
            await deployment.stop()
            // Written while the client is disconnected.
            _ = try deployment.mutation("conformance:increment", ["name": "restart"])
            try await deployment.restart()
            #expect(try await counter.next() == .int64(1))
            var sawReconnecting = false
            for await state in states {
                if case .reconnecting = state { sawReconnecting = true }
                if sawReconnecting, state == .connected { break }
            }
            #expect(sawReconnecting)
            // And it keeps following changes on the new socket.
            try await client.mutation("conformance:increment", with: ["name": "restart"])
            #expect(try await counter.next() == .int64(2))
        }
    }

    /// A paginated query's page keeps its end through a reconnect: the client sends the journal of its last result
    /// back when it re-adds the query, as convex-js does. Without it the page would re-run with `numItems` and
    /// shrink back to two posts, dropping one the page already showed.
    @Test func aPaginatedSubscriptionKeepsItsPageAcrossADeploymentRestart() async throws {
        func bodies(_ value: ConvexValue?) -> [String] {
            guard case .object(let page)? = value, case .array(let items)? = page["page"] else { return [] }
            return items.compactMap { if case .object(let d) = $0, case .string(let b)? = d["body"] { b } else { nil } }
        }
        try await withClientAndDeployment { client, deployment in
            for i in 0..<4 { _ = try deployment.mutation("feed:post", ["body": .string("p\(i)")]) }
            let args: [String: ConvexValue] = ["paginationOpts": ["numItems": 2.0, "cursor": .null]]
            var pages = client.subscribe(to: "feed:list", with: args).makeAsyncIterator()
            #expect(bodies(try await pages.next()) == ["p3", "p2"])
            _ = try deployment.mutation("feed:post", ["body": "p4"])
            #expect(bodies(try await pages.next()) == ["p4", "p3", "p2"])
            await deployment.stop()
            _ = try deployment.mutation("feed:post", ["body": "p5"])
            try await deployment.restart()
            #expect(bodies(try await pages.next()) == ["p5", "p4", "p3", "p2"])
        }
    }

    @Test func connectedButSilentServerTimesOutWithTimeout() async throws {
        let configuration = ConvexClientConfiguration(callTimeout: .milliseconds(600))
        try await withClientAndDeployment(configuration: configuration) { client, deployment in
            try await client.waitUntilConnected()
            deployment.setStalled(true)
            let query = await #expect(throws: ConvexClientError.self) {
                try await client.query("conformance:counter", with: ["name": "silent"])
            }
            #expect(query?.code == .timeout)
            let mutation = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("conformance:increment", with: ["name": "silent"])
            }
            #expect(mutation?.code == .timeout)
            #expect(mutation?.message.contains("may have run") == true)
            deployment.setStalled(false)
            // The timed-out mutation was sent, so it ran once; nothing resends it.
            await eventually("the sent mutation is applied") {
                (try? deployment.query("conformance:counter", ["name": "silent"])) == .int64(1)
            }
            #expect(try await client.query("conformance:counter", with: ["name": "silent"]) == .int64(1))
        }
    }

    @Test func unreachableDeploymentTimesOutWithUnreachable() async throws {
        // A port held by a socket that never listens: refused, and no other server of the run can take it.
        try await withRefusingPort { port in try await unreachable(port: port) }
    }

    private func unreachable(port: Int) async throws {
        let configuration = ConvexClientConfiguration(callTimeout: .milliseconds(800), maxBackoff: .milliseconds(200))
        try await ConvexClient.withClient(deploymentUrl: "http://127.0.0.1:\(port)", configuration: configuration) {
            client in
            let error = await #expect(throws: ConvexClientError.self) { try await client.mutation("m:f") }
            #expect(error?.code == .unreachable)
            #expect(error?.message.contains("never sent") == true)
            let readiness = await #expect(throws: ConvexClientError.self) {
                try await client.waitUntilConnected(timeout: .milliseconds(300))
            }
            #expect(readiness?.code == .unreachable)
            if case .reconnecting = client.connectionState {
            } else {
                Issue.record("expected reconnecting, got \(client.connectionState)")
            }
        }
    }

    @Test func closedClientFailsCallsAndEndsSubscriptions() async throws {
        try await withLocalDeployment(.init(port: 0)) { deployment in
            let client = try ConvexClient(deploymentUrl: deployment.url)
            var iterator = client.subscribe(to: "conformance:counter", with: ["name": "close"]).makeAsyncIterator()
            #expect(try await iterator.next() == .int64(0))
            await client.close()
            #expect(try await iterator.next() == nil)
            let error = await #expect(throws: ConvexClientError.self) { try await client.query("conformance:failing") }
            #expect(error?.code == .clientClosed)
            #expect(client.connectionState == .closed)
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientAuthTests {
    @Test func userTokenIsSeenByFunctions() async throws {
        try await withClientAndDeployment { client, _ in
            #expect(try await client.query("conformance:whoami")["identity"] == .null)
            client.setAuth(token: makeJWT(#"{"sub":"user-1","iss":"https://issuer.test","name":"Ada"}"#))
            await eventually("the identity is applied") {
                (try? await client.query("conformance:whoami"))?["identity"]?["subject"] == "user-1"
            }
            let identity = try await client.query("conformance:whoami")["identity"]
            #expect(identity?["name"] == "Ada")
            client.clearAuth()
            await eventually("the identity is cleared") {
                (try? await client.query("conformance:whoami"))?["identity"] == .null
            }
        }
    }

    @Test func liveSubscriptionFollowsIdentityChanges() async throws {
        try await withClientAndDeployment { (client, _) async throws in
            var whoami = client.subscribe(to: "conformance:whoami").makeAsyncIterator()
            #expect(try await whoami.next()?["identity"] == .null)
            client.setAuth(token: makeJWT(#"{"sub":"user-2","iss":"https://issuer.test"}"#))
            #expect(try await whoami.next()?["identity"]?["subject"] == "user-2")
        }
    }

    @Test func adminKeyIsAccepted() async throws {
        try await withClientAndDeployment(adminKey: "secret-key") { (client, _) async throws in
            client.setAdminAuth(key: "secret-key")
            #expect(try await client.query("conformance:whoami")["isAdmin"] == true)
            #expect(try await client.query("conformance:internalQuery") == "internal ok")
        }
    }

    @Test func rejectedCredentialsSurfaceAndStopRetrying() async throws {
        try await withClientAndDeployment(adminKey: "secret-key") { client, deployment in
            let states = client.connectionStates
            client.setAdminAuth(key: "wrong-key")
            let error = await #expect(throws: ConvexClientError.self) {
                try await client.query("conformance:whoami")
            }
            #expect(error?.code == .authenticationFailed)
            var failure: String?
            for await state in states {
                if case .authenticationFailed(let message) = state {
                    failure = message
                    break
                }
            }
            #expect(failure != nil)
            let opened = client.socketsOpened
            // Real time: the absence of a retry is seen only over a window of several reconnect backoffs (100 ms at
            // first, on the client's clock, here the real one); no event marks a retry that is not made.
            try await Task.sleep(for: .milliseconds(500))
            #expect(client.socketsOpened == opened, "no silent retry loop")
            #expect(deployment.syncConnectionCount == 0)
            // New credentials resume the client.
            client.setAdminAuth(key: "secret-key")
            #expect(try await client.query("conformance:whoami")["isAdmin"] == true)
        }
    }

    @Test func tokenProviderIsAskedOnEveryConnect() async throws {
        try await withClientAndDeployment { client, deployment in
            let calls = Mutex(0)
            try await client.setAuthProvider { _ in
                let n = calls.withLock { count in
                    count += 1
                    return count
                }
                return makeJWT(#"{"sub":"refresh-\#(n)","iss":"https://issuer.test"}"#)
            }
            let first = try await client.query("conformance:whoami")["identity"]?["subject"]
            #expect(first == "refresh-2")  // one call when installed, one for the connect
            deployment.closeSyncConnections()
            await eventually("a reconnect asks the provider again") { calls.withLock { $0 } >= 3 }
            await eventually("the refreshed token is used") {
                (try? await client.query("conformance:whoami"))?["identity"]?["subject"] == "refresh-3"
            }
        }
    }

    @Test func throwingTokenProviderFailsVisibly() async throws {
        try await withClientAndDeployment { client, _ in
            struct NoToken: Error {}
            let error = await #expect(throws: ConvexClientError.self) {
                try await client.setAuthProvider { _ in throw NoToken() }
            }
            #expect(error?.code == .authenticationFailed)
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientProtocolViolationTests {
    /// A valid Transition answering query 0 on a fresh socket.
    static func answer(querySet: UInt32, value: ConvexValue) -> String {
        ServerMessage.transition(
            .init(
                startVersion: .initial,
                endVersion: StateVersion(querySet: querySet, identity: 0, ts: ConvexTimestamp(nanoseconds: 10)),
                modifications: [.queryUpdated(queryId: 0, value: value, logLines: [], journal: nil)])
        ).jsonText
    }

    static let violations: [(name: String, frame: String)] = [
        ("unknown message type", #"{"type":"SomethingNew"}"#),
        (
            "wrong start version",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"6AMAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"6AMAAAAAAAA="},"modifications":[]}"#
        ),
        (
            "undecodable value",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[{"type":"QueryUpdated","queryId":0,"value":{"$integer":"AQ"},"logLines":[]}]}"#
        ),
        (
            "missing logLines",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[{"type":"QueryUpdated","queryId":0,"value":1.0}]}"#
        ),
        ("not JSON", "this is not json"),
        (
            "query set version never sent",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":9,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[]}"#
        ),
        ("FatalError", #"{"type":"FatalError","error":"test fatal"}"#),
    ]

    @Test(arguments: violations)
    func brokenServerMessageMakesTheClientReconnect(name: String, frame: String) async throws {
        // Generous deadlines: the first socket must end by the violation, not by a slow open on half a core, and the
        // query waits for a reconnect (20 s did not do beside a container build on a loaded machine).
        let configuration = ConvexClientConfiguration(
            callTimeout: .seconds(45), connectTimeout: .seconds(60), initialBackoff: .milliseconds(10))
        try await ScriptedSyncServer.with(script: { socket, message, send in
            guard case .modifyQuerySet(let modify) = message else { return }
            if socket == 0 {
                try await send(frame)
            } else {
                try await send(Self.answer(querySet: modify.newVersion, value: "recovered"))
            }
        }) { url, server in
            try await ConvexClient.withClient(deploymentUrl: url, configuration: configuration) {
                (client) async throws in
                #expect(try await client.query("m:f") == "recovered", "\(name)")
            }
            #expect(server.socketCount >= 2)
            // The second socket's Connect names why the first ended, under the same session.
            let connects = server.receivedMessages.compactMap { entry -> (Int, ClientMessage.Connect)? in
                if case .connect(let c) = entry.message { return (entry.socket, c) }
                return nil
            }
            #expect(connects.count >= 2)
            if connects.count >= 2 {
                #expect(connects[0].1.lastCloseReason == "InitialConnect")
                #expect(connects[1].1.lastCloseReason != "InitialConnect")
                #expect(connects[0].1.sessionId == connects[1].1.sessionId)
            }
        }
    }

    @Test func handshakeCarriesTheConvexClientHeader() async throws {
        try await ScriptedSyncServer.with(script: { _, message, send in
            guard case .modifyQuerySet(let modify) = message else { return }
            try await send(Self.answer(querySet: modify.newVersion, value: 1.0))
        }) { url, server in
            try await ConvexClient.withClient(deploymentUrl: url) { (client) async throws in
                #expect(try await client.query("m:f") == 1.0)
            }
            #expect(server.convexClientHeaders == ["swift-linux-0.1.0"])
        }
    }
}

/// The seed's example type: int64 fields through `@ConvexInt`.
struct BaseballTeam: Decodable, Sendable {
    let name: String
    let uniformColors: [String]
    @ConvexInt var wins: Int
    @ConvexInt var losses: Int
}

struct DivisionArgs: Encodable {
    let division: String
}

struct IncrementArgs: Encodable {
    let name: String
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientTypedTests {
    @Test func typedSubscriptionWithConvexIntFields() async throws {
        try await withClientAndDeployment { client, _ in
            let teams = client.subscribe(
                to: "mlb:first_place_team", with: ["division": "AL Central"], yielding: BaseballTeam.self)
            var iterator = teams.makeAsyncIterator()
            let leader = try #require(try await iterator.next())
            #expect(!leader.uniformColors.isEmpty)
            // Record a win for the leader: the typed subscription sees the new count.
            let updated: BaseballTeam = try await client.mutation(
                "mlb:record_win", with: ["team": .string(leader.name)])
            #expect(updated.wins == leader.wins + 1)
            let next = try #require(try await iterator.next())
            #expect(next.name == leader.name)
            #expect(next.wins == leader.wins + 1)
        }
    }

    @Test func typedCallsInferTheResultType() async throws {
        try await withClientAndDeployment { client, _ in
            let team: BaseballTeam = try await client.query(
                "mlb:first_place_team", with: DivisionArgs(division: "AL East"))
            #expect(!team.name.isEmpty)
            let count: Int = try await client.mutation("conformance:increment", with: IncrementArgs(name: "typed"))
            #expect(count == 1)
            let sum: Double = try await client.action("conformance:add", with: ["a": 0.5, "b": 0.25])
            #expect(sum == 0.75)
            // Without type context the untyped value comes back, and a bare call is the Void form.
            let raw = try await client.query(
                "conformance:counter", with: IncrementArgs(name: "typed"), yielding: ConvexValue.self)
            #expect(raw == .int64(1))
            try await client.mutation("conformance:increment", with: IncrementArgs(name: "typed"))
            try await client.mutation("conformance:increment", with: ["name": "typed"])
            #expect(try await client.query("conformance:counter", with: ["name": "typed"]) == .int64(3))
        }
    }

    @Test func resultThatDoesNotDecodeIsADecodingFailure() async throws {
        try await withClientAndDeployment { client, _ in
            // A float64 is not an int64: `Int` fields need int64 values.
            let error = await #expect(throws: ConvexClientError.self) {
                let _: Int = try await client.action("conformance:add", with: ["a": 1.0, "b": 2.0])
            }
            #expect(error?.code == .decodingFailed)
            var results = client.subscribe(to: "conformance:counter", with: ["name": "x"], yielding: String.self)
                .results.makeAsyncIterator()
            guard case .failure(let failure)? = await results.next() else {
                Issue.record("expected a decoding failure element")
                return
            }
            #expect(failure.code == .decodingFailed)
        }
    }

    @Test func argumentsThatAreNotAnObjectAreRejected() async throws {
        try await withClientAndDeployment { client, _ in
            let error = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("conformance:increment", with: [1, 2, 3])
            }
            #expect(error?.code == .invalidArguments)
        }
    }
}

/// The admin client's function-spec call against a real local deployment.
@Suite(.timeLimit(.minutes(5))) struct AdminClientTests {
    @Test func functionSpecWithTheAdminKeyAndARefusalWithoutIt() async throws {
        try await withLocalDeployment(.init(port: 0, adminKey: "test-admin-key")) { deployment in
            // 30 s, not the 5 s default: the whole suite runs in parallel, so a loopback fetch can wait seconds.
            let spec = try await ConvexAdminClient(deploymentURL: deployment.url + "/", adminKey: "test-admin-key")
                .functionSpec(timeout: .seconds(30))
            let list = try #require(spec.publicFunction(try UdfPath(parsing: "items:list")))
            #expect(list.kind == .query)
            #expect(spec.functions["items:update"]?.args == .object(["id": .id("items"), "text": .string]))
            do throws(FunctionSpecError) {
                _ = try await ConvexAdminClient(deploymentURL: deployment.url, adminKey: "wrong")
                    .functionSpec(timeout: .seconds(30))
                Issue.record("a wrong admin key was accepted")
            } catch {
                #expect(error.message.contains("answered 401") || error.message.contains("answered 403"))
                #expect(!error.message.contains("wrong"))
            }
            let client = ConvexAdminClient(deploymentURL: deployment.url, adminKey: "test-admin-key")
            #expect(!"\(client)".contains("test-admin-key"))
        }
    }
}
