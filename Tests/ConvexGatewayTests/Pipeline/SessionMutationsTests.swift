import ConvexGateway
import ConvexValues
import Foundation
import TestSupport
import Testing

/// `POST /mutations`: a page's mutations run in its call order as requests of its sync session, and a resend (to this
/// gateway or another replica) is answered from the deployment's record instead of running again.
@Suite struct SessionMutationsTests {
    private static func batch(_ entries: [(id: Int, path: String, args: String)]) -> String {
        let items = entries.map { #"{"requestId":\#($0.id),"path":"\#($0.path)","args":\#($0.args)}"# }
        return #"{"mutations":["# + items.joined(separator: ",") + "]}"
    }

    private static func headers(session: String) -> [String: String] {
        ["Content-Type": "application/json", "Convex-Session-Id": session]
    }

    private static func newSession() -> String { UUID().uuidString.lowercased() }

    private static func results(_ response: TestResponse) -> [ConvexValue] {
        if case .array(let list)? = response.json?["results"] { return list }
        return []
    }

    @Test func aBatchCommitsInOrderWithEachCommitTimestamp() async throws {
        try await TestGateway.run(.inProcess) { h in
            let entries = (0..<20).map { (id: $0, path: "items:add", args: #"{"text":"\#($0)"}"#) }
            let response = try await h.post(
                "/mutations", json: Self.batch(entries), headers: Self.headers(session: Self.newSession()))
            #expect(response.status == 200, "\(response.text)")
            let results = Self.results(response)
            #expect(results.count == 20)
            let stamps = results.compactMap { result -> UInt64? in
                if case .string(let ts)? = result["ts"] { return UInt64(ts) }
                return nil
            }
            #expect(stamps.count == 20 && stamps == stamps.sorted() && Set(stamps).count == 20, "\(stamps)")
            #expect(response.header("Convex-Timestamp") == stamps.last.map(String.init))
            #expect(results.map { $0["requestId"] } == (0..<20).map { .float64(Double($0)) })
            // items:list is newest first: reversed, the texts are the call order.
            let list = try await h.get("/query/items:list")
            guard case .array(let items)? = list.json else {
                Issue.record("items:list: \(list.text)")
                return
            }
            #expect(items.reversed().map { $0["text"] } == (0..<20).map { .string("\($0)") })
        }
    }

    @Test func aResendRunsOnceOnThisGatewayAndOnAnotherReplica() async throws {
        try await TestGateway.run(.inProcess) { h in
            let session = Self.newSession()
            let increment = Self.batch([(id: 7, path: "conformance:increment", args: #"{"name":"once"}"#)])
            let first = try await h.post("/mutations", json: increment, headers: Self.headers(session: session))
            #expect(Self.results(first).first?["value"] == .float64(1), "\(first.text)")
            // The answer was lost: the page sends the same request again, here and through another replica.
            let again = try await h.post("/mutations", json: increment, headers: Self.headers(session: session))
            #expect(Self.results(again).first?["value"] == .float64(1), "\(again.text)")
            #expect(Self.results(again).first?["ts"] == Self.results(first).first?["ts"])
            try await h.withReplica { port in
                let replica = TestClientPort(port: port)
                let resent = try await replica.post(
                    "/mutations", json: increment, headers: Self.headers(session: session))
                #expect(Self.results(resent).first?["value"] == .float64(1), "\(resent.text)")
                // A new request of the session, and the same request of another session, do run.
                let next = Self.batch([(id: 8, path: "conformance:increment", args: #"{"name":"once"}"#)])
                let ran = try await replica.post("/mutations", json: next, headers: Self.headers(session: session))
                #expect(Self.results(ran).first?["value"] == .float64(2), "\(ran.text)")
                let other = try await replica.post(
                    "/mutations", json: increment, headers: Self.headers(session: Self.newSession()))
                #expect(Self.results(other).first?["value"] == .float64(3), "\(other.text)")
            }
            let counter = try await h.get("/query/conformance:counter?name=once")
            #expect(counter.json == .float64(3), "\(counter.text)")
        }
    }

    @Test func aFunctionsFailureFailsItsEntryOnly() async throws {
        try await TestGateway.run(.inProcess) { h in
            let body = Self.batch([
                (id: 1, path: "conformance:increment", args: #"{"name":"f"}"#),
                (id: 2, path: "conformance:convexError", args: #"{"data":{"why":"no"}}"#),
                (id: 3, path: "nowhere:missing", args: "{}"),
                (id: 4, path: "conformance:increment", args: #"{"name":"f"}"#),
            ])
            let response = try await h.post("/mutations", json: body, headers: Self.headers(session: Self.newSession()))
            #expect(response.status == 200, "\(response.text)")
            let results = Self.results(response)
            #expect(results.count == 4)
            #expect(results.first?["value"] == .float64(1))
            #expect(results.dropFirst().first?["status"] == .float64(422))
            #expect(results.dropFirst().first?["error"]?["code"] == .string("ConvexError"))
            #expect(results.dropFirst().first?["error"]?["data"]?["why"] == .string("no"))
            #expect(results.dropFirst(2).first?["status"] == .float64(404))
            #expect(results.last?["value"] == .float64(2))
        }
    }

    @Test func aBadBatchIsRefusedWholeAndRunsNothing() async throws {
        try await TestGateway.run(.inProcess) { h in
            let good = Self.batch([(id: 1, path: "conformance:increment", args: #"{"name":"bad"}"#)])
            let session = Self.newSession()
            let cases: [(body: String, headers: [String: String], code: String)] = [
                (good, ["Content-Type": "application/json"], "InvalidSession"),
                (good, Self.headers(session: session.uppercased()), "InvalidSession"),
                (good, Self.headers(session: "page-1"), "InvalidSession"),
                (#"{"mutations":[]}"#, Self.headers(session: session), "InvalidMutations"),
                (#"[]"#, Self.headers(session: session), "BadRequest"),
                (#"{"mutations":[{"path":"a:b"}]}"#, Self.headers(session: session), "InvalidMutations"),
                (
                    Self.batch((0...100).map { (id: $0, path: "conformance:increment", args: #"{"name":"bad"}"#) }),
                    Self.headers(session: session), "InvalidMutations"
                ),
                (
                    Self.batch([
                        (id: 2, path: "conformance:increment", args: #"{"name":"bad"}"#),
                        (id: 2, path: "conformance:increment", args: #"{"name":"bad"}"#),
                    ]), Self.headers(session: session), "InvalidMutations"
                ),
                (
                    Self.batch([
                        (id: 1, path: "conformance:increment", args: #"{"name":"bad"}"#),
                        (id: 2, path: "a/../b", args: "{}"),
                    ]), Self.headers(session: session), "InvalidFunctionPath"
                ),
                (#"{"mutations":[{"requestId":-1,"path":"a:b"}]}"#, Self.headers(session: session), "InvalidMutations"),
            ]
            for (body, headers, code) in cases {
                let response = try await h.post("/mutations", json: body, headers: headers)
                #expect(response.status == 400, "\(body): \(response.text)")
                #expect(response.errorCode == code || (code == "BadRequest" && response.errorCode != nil), "\(body)")
            }
            let counter = try await h.get("/query/conformance:counter?name=bad")
            #expect(counter.json == .float64(0), "\(counter.text)")
        }
    }

    @Test func anUnreachableDeploymentIs503WithRetryAfter() async throws {
        try await withRefusingPort { port in
            try await TestGateway.run(
                .inProcess, configure: { $0.connectTimeout = .milliseconds(500) },
                deploymentURL: "http://127.0.0.1:\(port)"
            ) { h in
                let body = Self.batch([(id: 1, path: "items:add", args: #"{"text":"x"}"#)])
                let response = try await h.post(
                    "/mutations", json: body, headers: Self.headers(session: Self.newSession()))
                #expect(response.status == 503, "\(response.text)")
                #expect(response.header("Retry-After") != nil)
            }
        }
    }

    @Test func aPreflightAllowsTheSessionHeader() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.cors = CORSPolicy(origins: ["http://page.test"]) })
        {
            h in
            let preflight = try await h.request(
                "OPTIONS", "/mutations",
                headers: [
                    "Origin": "http://page.test", "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "content-type, convex-session-id",
                ])
            #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Convex-Session-Id") == true)
        }
    }
}

/// The HTTP calls of ``GatewayUnderTest`` on another port (a replica's).
private struct TestClientPort: GatewayUnderTest {
    let port: Int
}
