import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Convex

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
