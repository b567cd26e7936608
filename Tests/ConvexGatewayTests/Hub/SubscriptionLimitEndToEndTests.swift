import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// The subscription limit through a real gateway: once `--max-subscriptions` are live, a request that needs one more
/// is answered at once (a stream and a batch `GET` with 503 `Overloaded` and `Retry-After`, a `GET` of one query with
/// a one-shot call), and keeps nothing in the hub. The upstream timeout is longer than the time limit, so a request
/// that waited for it would fail the test; each answer must come within the test connection's receive timeout.
@Suite(.timeLimit(.minutes(5)))
struct SubscriptionLimitEndToEndTests {
    @Test func newReadsAtTheLimitAreAnsweredAtOnce() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: { configuration in
                configuration.maxSubscriptions = 3
                configuration.maxSubscriptionsPerCaller = 3  // this test's one client may fill the table
                configuration.upstreamTimeout = .seconds(600)
                configuration.heartbeatInterval = .seconds(60)
            }
        ) { h in
            // Three idle streams with distinct arguments fill the table.
            var streams: [EventStreamReader] = []
            defer { for stream in streams { stream.close() } }
            for name in ["a", "b", "c"] {
                let stream = try await h.openStream("/subscribe/echo:echo?name=\(name)")
                #expect(stream.head.status == 200)
                streams.append(stream)
            }
            let hub = h.gateway.core.hub
            #expect(hub.subscriptionCount == 3)

            let stream = try await h.get("/subscribe/mlb:teams", headers: ["Accept": "text/event-stream"])
            #expect(stream.status == 503)
            #expect(stream.header("Retry-After") == "5")
            #expect(stream.errorCode == "Overloaded")
            #expect(stream.text.contains("Subscription limit reached"))
            let many = try await h.get("/subscribe?sub.t=mlb:teams", headers: ["Accept": "text/event-stream"])
            #expect(many.status == 503)
            #expect(many.header("Retry-After") == "5")
            #expect(many.json?["error"]?["sub"] == .string("t"), "the refusal names the subscription")
            let asStream = try await h.get("/query/mlb:teams", headers: ["Accept": "text/event-stream"])
            #expect(asStream.status == 503)

            let query = try await h.get("/query/mlb:teams")
            #expect(query.status == 200)
            #expect(query.text.contains("Guardians"))
            let again = try await h.get("/query/mlb:teams?division=AL%20East")
            #expect(again.status == 200)
            #expect(again.text.contains("Orioles"))

            let batch = try await h.get("/query?q.x=mlb:teams")
            #expect(batch.status == 503)
            #expect(batch.header("Retry-After") == "5")
            #expect(batch.errorCode == "Overloaded")
            // One query the table holds and one it cannot: the batch is refused as a whole, at once.
            let mixed = try await h.get("/query?q.a=echo:echo&args.a=%7B%22name%22%3A%22a%22%7D&q.x=mlb:teams")
            #expect(mixed.status == 503)

            // What the table holds is still served, and nothing was added to it or left waiting in it.
            let held = try await h.get("/query/echo:echo?name=a")
            #expect(held.status == 200)
            #expect(held.text.contains(#""name":"a""#))
            #expect(hub.subscriptionCount == 3)
            #expect(hub.waitsKept == [0, 0])
        }
    }

    /// `echo:echo` with `{"name": <name>}`, as a batch or stream URL's `args.<id>` (URL-encoded JSON).
    static func echoArguments(_ name: String) -> String { "%7B%22name%22%3A%22\(name)%22%7D" }

    /// A multi-subscription stream of `echo:echo` once per name, each named and called with it.
    static func echoStream(_ names: [String]) -> String {
        "/subscribe?" + names.map { "sub.\($0)=echo:echo&args.\($0)=\(echoArguments($0))" }.joined(separator: "&")
    }

    @Test func oneCallerCannotTakeTheWholeTable() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: { configuration in
                configuration.maxSubscriptions = 10
                configuration.maxSubscriptionsPerCaller = 3
                configuration.upstreamTimeout = .seconds(600)
                configuration.heartbeatInterval = .seconds(60)
            }
        ) { h in
            let hub = h.gateway.core.hub
            // An anonymous client (this test's address) makes its whole share with one stream of three.
            let greedy = try await h.openStream(Self.echoStream(["a", "b", "c"]))
            defer { greedy.close() }
            #expect(greedy.head.status == 200)
            #expect(hub.subscriptionCount == 3)

            // It gets no more, at once: a stream or batch GET that needs one is a 429 naming the limit…
            let stream = try await h.get("/subscribe/mlb:teams", headers: ["Accept": "text/event-stream"])
            #expect(stream.status == 429)
            #expect(stream.errorCode == "TooManySubscriptions")
            #expect(stream.header("Retry-After") != nil)
            #expect(stream.text.contains("3 live subscriptions"), "\(stream.text)")
            #expect(stream.text.contains("--max-subscriptions-per-caller"), "\(stream.text)")
            let batch = try await h.get("/query?q.x=mlb:teams")
            #expect(batch.status == 429)
            #expect(batch.errorCode == "TooManySubscriptions")
            // …a GET of one query a one-shot answer, and what is live is still read.
            let query = try await h.get("/query/mlb:teams")
            #expect(query.status == 200)
            #expect(query.text.contains("Guardians"))
            let live = try await h.get("/query/echo:echo?name=a")
            #expect(live.status == 200)
            #expect(live.text.contains(#""name":"a""#))
            #expect(hub.subscriptionCount == 3, "the table holds the client's share and no more")

            // Another caller is still served, with subscriptions of its own.
            let signedIn = ["Authorization": "Bearer \(HotPathTests.jwt(subject: "other"))"]
            let other = try await h.openStream("/subscribe/mlb:teams", headers: signedIn)
            defer { other.close() }
            #expect(other.head.status == 200)
            let otherBatch = try await h.get(
                "/query?q.a=echo:echo&args.a=\(Self.echoArguments("a"))&q.t=mlb:teams", headers: signedIn)
            #expect(otherBatch.status == 200, "\(otherBatch.text)")
            #expect(otherBatch.text.contains("Guardians"))
            #expect(hub.subscriptionCount == 5)
            #expect(hub.waitsKept == [0, 0])
        }
    }

    @Test func aStreamOrBatchCostsOneRequestPerSubscription() async throws {
        // A budget of five requests that refills too slowly to matter within the test.
        try await TestGateway.run(
            .inProcess,
            configure: { configuration in
                configuration.access.rateLimit = 0.01
                configuration.access.rateLimitBurst = 5
                configuration.heartbeatInterval = .seconds(60)
            }
        ) { h in
            let four = try await h.openStream(Self.echoStream(["a", "b", "c", "d"]))
            defer { four.close() }
            #expect(four.head.status == 200)
            // One request is left: a batch of two costs two.
            let batch = try await h.get("/query?q.a=echo:echo&q.b=mlb:teams")
            #expect(batch.status == 429)
            #expect(batch.errorCode == "RateLimited")
            #expect(batch.header("Retry-After") != nil)
        }
    }
}
