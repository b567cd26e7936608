import Convex
import ConvexGateway
import ConvexValues
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ConvexGateway

/// Read-your-writes over HTTP through real gateways on a real local deployment, measured as the issue measured it: a
/// signed-in writer and an anonymous reader whose `GET` is answered from a live subscription of another upstream
/// connection.
@Suite(.timeLimit(.minutes(5)))
struct ReadYourWritesEndToEndTests {
    static let writer = ["Authorization": "Bearer " + HotPathTests.jwt(subject: "ryw-writer")]

    static func count(_ response: TestResponse) -> Int64? {
        guard response.status == 200 else { return nil }
        switch response.json {
        case .int64(let value)?: return value
        case .float64(let value)?: return Int64(value)
        default: return nil
        }
    }

    static func timestamp(_ response: TestResponse) -> UInt64? {
        response.header("Convex-Timestamp").flatMap { UInt64($0) }
    }

    @Test func aGetAfterAWriteNeverShowsTheWorldBeforeIt() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/conformance:counter?name=ryw-one"
            // The reader's target is answered from a live subscription, on the hot path once remembered.
            _ = try await HotPathTests.warm(h, target)
            let stale = try await Self.staleReads(rounds: 1000, name: "ryw-one", through: h) { _ in
                try await h.get(target)
            }
            #expect(stale.isEmpty, "\(stale.count) stale of 1000: \(stale.prefix(5))")
            #expect(h.gateway.core.hotPath.targets.route(for: target) != nil, "the reader's target stayed hot")
        }
    }

    /// Once the gateway answered a write, reads wait for their connection's view to reach its commit; a caller whose
    /// token the deployment refuses gets its 401 all the same, not a 504 once the wait runs out (a refused connection
    /// waits for new credentials, so its view never moves). Each expired token is a new identity, so a new connection
    /// whose refusal comes while the read already waits. The upstream timeout is generous (the write connects a new
    /// identity on a loaded machine); a read that waited for it would answer 504 after it, and fail.
    @Test func aRefusedTokenAfterAWriteIsAnsweredUnauthenticatedNotTimedOut() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.upstreamTimeout = .seconds(30) }) { h in
            let wrote = try await h.post(
                "/mutation/conformance:increment", json: #"{"name":"ryw-refused"}"#,
                headers: ["Content-Type": "application/json"].merging(Self.writer) { $1 })
            #expect(wrote.status == 200, "\(wrote.text)")
            for (index, seconds) in [-60.0, -120.0, -180.0].enumerated() {
                let expired = [
                    "Authorization": "Bearer "
                        + TokenExpiryTests.jwt(subject: "ryw-refused-\(index)", expiresIn: seconds)
                ]
                let get = try await h.get("/query/conformance:counter?name=ryw-refused", headers: expired)
                #expect(get.status == 401, "GET: \(get.status) \(get.text)")
                let post = try await h.post(
                    "/query/conformance:counter", json: #"{"name":"ryw-refused"}"#,
                    headers: ["Content-Type": "application/json"].merging(expired) { $1 })
                #expect(post.status == 401, "POST: \(post.status) \(post.text)")
            }
        }
    }

    /// `rounds` times: a signed-in `POST /mutation/conformance:increment` of counter `name` through `h`, then `read`
    /// (given the write's commit timestamp). Returns the rounds whose read showed an older count or snapshot.
    static func staleReads(
        rounds: Int, name: String, through h: GatewayHarness, read: (UInt64) async throws -> TestResponse
    ) async throws -> [String] {
        var stale: [String] = []
        for round in 0..<rounds {
            let wrote = try await h.post(
                "/mutation/conformance:increment", json: #"{"name":"\#(name)"}"#,
                headers: Self.writer.merging(["Content-Type": "application/json"]) { a, _ in a })
            let written = try #require(Self.count(wrote), "\(wrote.status) \(wrote.text)")
            let commit = try #require(Self.timestamp(wrote), "a mutation answer names its commit")
            let answer = try await read(commit)
            let seen = try #require(Self.count(answer), "\(answer.status) \(answer.text)")
            let snapshot = try #require(Self.timestamp(answer), "a query answer names its snapshot")
            if seen < written || snapshot < commit {
                stale.append("round \(round): wrote \(written) at \(commit), read \(seen) at \(snapshot)")
            }
        }
        return stale
    }

    static func get(_ port: Int, _ target: String, headers: [String: String] = [:]) async throws -> TestResponse {
        try await blocking { try RawConnection.request("GET", target, port: port, headers: headers) }
    }

    @Test func aReplicaAskedForTheWritesTimestampShowsTheWrite() async throws {
        try await TestGateway.run(.inProcess) { h in
            try await h.withReplica { replica in
                let target = "/query/conformance:counter?name=ryw-two"
                var warm = try await Self.get(replica, target)
                for _ in 0..<50 where h.gateway.core.hotPath.targets.count == 0 && warm.status == 200 {
                    warm = try await Self.get(replica, target)
                }
                let stale = try await Self.staleReads(rounds: 300, name: "ryw-two", through: h) { commit in
                    try await Self.get(replica, target, headers: ["Convex-Min-Timestamp": String(commit)])
                }
                #expect(stale.isEmpty, "\(stale.count) stale of 300: \(stale.prefix(5))")
            }
        }
    }

    @Test func aTimestampTheDeploymentHasNotReachedIsA504() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.upstreamTimeout = .seconds(1) }) { h in
            let future = String(UInt64(Int64.max) - 1)
            for target in ["/query/conformance:counter?name=ryw-future", "/query?q.a=conformance:counter"] {
                let answer = try await h.get(target, headers: ["Convex-Min-Timestamp": future])
                #expect(answer.status == 504, "\(target): \(answer.text)")
                #expect(answer.errorCode == "UpstreamTimeout")
                #expect(answer.text.contains("did not reach timestamp \(future)"))
            }
            let posted = try await h.post(
                "/query/conformance:counter", json: #"{"name":"ryw-future"}"#,
                headers: ["Content-Type": "application/json", "Convex-Min-Timestamp": future])
            #expect(posted.status == 504)
            let stream = try await h.get(
                "/subscribe/conformance:counter?name=ryw-future", headers: ["Convex-Min-Timestamp": future])
            #expect(stream.status == 504)
            let malformed = try await h.get(
                "/query/conformance:counter?name=ryw-future", headers: ["Convex-Min-Timestamp": "yesterday"])
            #expect(malformed.status == 400)
            #expect(malformed.errorCode == "InvalidTimestamp")
        }
    }

    @Test func everyAnswerNamesItsTimestamp() async throws {
        try await TestGateway.run(.inProcess) { h in
            let wrote = try await h.post("/mutation/conformance:increment", json: #"{"name":"ryw-ts"}"#)
            let commit = try #require(Self.timestamp(wrote))
            let posted = try await h.post("/query/conformance:counter", json: #"{"name":"ryw-ts"}"#)
            #expect(try #require(Self.timestamp(posted)) >= commit)
            let got = try await h.get("/query/conformance:counter?name=ryw-ts")
            #expect(try #require(Self.timestamp(got)) >= commit)
            let etag = try #require(got.header("ETag"))
            let notModified = try await h.get(
                "/query/conformance:counter?name=ryw-ts", headers: ["If-None-Match": etag])
            #expect(notModified.status == 304)
            #expect(Self.timestamp(notModified) != nil)
            let action = try await h.post("/action/echo:echoAction", json: #"{"value":1}"#)
            #expect(action.status == 200)
            #expect(action.header("Convex-Timestamp") == nil, "an action has no snapshot or commit of its own")
            // The stream's first event, after the write, is at or past it.
            let stream = try await h.openStream(
                "/subscribe?sub.a=conformance:counter&args.a=%7B%22name%22%3A%22ryw-ts%22%7D",
                headers: ["Convex-Min-Timestamp": String(commit)])
            defer { stream.close() }
            #expect(stream.head.status == 200)
            let first = try #require(try await stream.nextEventAsync())
            let data = try #require(try? ConvexValue(plainJSON: Array(first.data.utf8)))
            guard case .string(let ts)? = data["ts"] else {
                Issue.record("a transition names its timestamp: \(first.data)")
                return
            }
            #expect(try #require(UInt64(ts)) >= commit)
        }
    }

    // MARK: One snapshot for many queries

    @Test func aBatchReadsEveryQueryAtOneSnapshotWhileWritesRun() async throws {
        try await TestGateway.run(.inProcess) { h in
            let division = "AL%20West"
            let target =
                "/query?q.leader=mlb:first_place_team&args.leader=%7B%22division%22%3A%22\(division)%22%7D"
                + "&q.teams=mlb:teams&args.teams=%7B%22division%22%3A%22\(division)%22%7D"
            let done = Atomic<Bool>(false)
            let writing = Task {
                defer { done.store(true, ordering: .releasing) }
                for index in 0..<60 {
                    _ = try await h.post(
                        "/mutation/mlb:record_win", json: #"{"team":"\#(index % 3 == 0 ? "Mariners" : "Astros")"}"#)
                }
            }
            var torn: [String] = []
            var reads = 0
            // Reads while the writes run (and at least 40 in all).
            while reads < 40 || !done.load(ordering: .acquiring) {
                let answer = try await h.get(target)
                #expect(answer.status == 200, "\(answer.text)")
                reads += 1
                guard let body = answer.json, case .string(let ts)? = body["ts"], UInt64(ts) != nil,
                    let leader = body["values"]?["leader"], case .array(let teams)? = body["values"]?["teams"]
                else {
                    Issue.record("unexpected batch answer: \(answer.text)")
                    break
                }
                #expect(answer.header("Convex-Timestamp") == ts)
                let row = teams.first { $0["name"] == leader["name"] }
                if row?["wins"] != leader["wins"] {
                    torn.append("leader \(String(describing: leader)) vs row \(String(describing: row))")
                }
            }
            try await writing.value
            #expect(torn.isEmpty, "\(torn.count) torn of \(reads): \(torn.prefix(3))")
        }
    }

    @Test func aBatchHasOneTagAndWaitsForAnyChange() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target =
                "/query?q.a=conformance:counter&args.a=%7B%22name%22%3A%22ryw-b1%22%7D"
                + "&q.b=conformance:counter&args.b=%7B%22name%22%3A%22ryw-b2%22%7D&q.c=nope:missing"
            let first = try await h.get(target)
            #expect(first.status == 200)
            #expect(first.json?["values"]?["a"] == .int64(0) || first.json?["values"]?["a"] == .float64(0))
            #expect(first.json?["errors"]?["c"]?["code"] == .string("FunctionNotFound"))
            #expect(first.json?["values"]?["c"] == nil)
            let etag = try #require(first.header("ETag"))
            let again = try await h.get(target, headers: ["If-None-Match": etag])
            #expect(again.status == 304)
            let port = h.port
            let waiting = Task {
                try await blocking {
                    try RawConnection.request(
                        "GET", target, port: port, headers: ["If-None-Match": etag, "Prefer": "wait=20"])
                }
            }
            let hub = h.gateway.core.hub
            // The long-poll holds all three queries (the missing function's too: its error is its result).
            await waitUntil { hub.attachmentCount == 3 }
            _ = try await h.post("/mutation/conformance:increment", json: #"{"name":"ryw-b2"}"#)
            let changed = try await waiting.value
            #expect(changed.status == 200)
            #expect(changed.header("Preference-Applied") == "wait=20")
            #expect(changed.json?["values"]?["b"] == .int64(1) || changed.json?["values"]?["b"] == .float64(1))
            #expect(changed.header("ETag") != etag)
        }
    }

    @Test func aBadBatchIsRefusedNamingTheQuery() async throws {
        try await TestGateway.run(.inProcess) { h in
            for (target, code) in [
                ("/query", "InvalidQueries"), ("/query?q.a=conformance:counter&args.a=%7B", "MalformedJSON"),
                ("/query?q.a%21=conformance:counter", "InvalidQueries"), ("/query?x=1", "InvalidQueries"),
                ("/query?q.a=messages:", "InvalidFunctionPath"), ("/query?args.a=%7B%7D", "InvalidQueries"),
            ] {
                let answer = try await h.get(target)
                #expect(answer.status == 400, "\(target): \(answer.text)")
                #expect(answer.errorCode == code, "\(target): \(answer.text)")
            }
            let posted = try await h.post("/query", json: "{}")
            #expect(posted.status == 405)
        }
    }
}
