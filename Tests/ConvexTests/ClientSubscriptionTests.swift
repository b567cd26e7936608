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
