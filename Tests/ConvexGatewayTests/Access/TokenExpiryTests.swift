import Clocks
import ConvexGateway
import ConvexLocal
import ConvexValues
import Foundation
import TestSupport
import Testing

/// A caller's token expiring, end to end: the embedded deployment enforces `exp` even in its unverified mode, so
/// unsigned tokens show what a signed-in user's stream goes through after about an hour. The gateway and the
/// deployment share a test clock, which the test moves past `exp`: no decision waits for real time.
@Suite("Token expiry through the gateway", .timeLimit(.minutes(5)))
struct TokenExpiryTests {
    /// An unsigned JWT for `subject` that expires `seconds` after `now` (seconds since 1970; before it, when
    /// negative), issued `issuedIn` seconds after `now` (a second before it by default). `now` is the real wall clock
    /// unless a test passes its clock's (`ElapsedClock.wallSeconds`).
    // Real time: the default reads the wall clock for tokens that live an hour or expired long ago; a test of expiry passes its test clock's `now`.
    static func jwt(
        subject: String, expiresIn seconds: Double, issuedIn: Double = -1, now: Double = Date().timeIntervalSince1970
    ) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let claims =
            #"{"sub":"\#(subject)","iss":"https://issuer.test","iat":\#(Int(now + issuedIn)),"exp":\#(Int(now + seconds))}"#
        return part(#"{"alg":"none"}"#) + "." + part(claims) + ".sig"
    }

    @Test("a one-shot call with an expired token is a 401 Unauthenticated")
    func expiredTokenIs401() async throws {
        try await TestGateway.run(.inProcess) { h in
            let expired = ["Authorization": "Bearer \(Self.jwt(subject: "late", expiresIn: -60))"]
            let query = try await h.get("/query/conformance:whoami", headers: expired)
            #expect(query.status == 401, "\(query.text)")
            #expect(query.errorCode == "Unauthenticated")
            #expect(query.text.contains("expired"), "\(query.text)")
            #expect(query.header("WWW-Authenticate") == "Bearer")
            let mutation = try await h.post(
                "/mutation/messages:send", json: #"{"body":"x","channel":"expiry"}"#,
                headers: expired.merging(["Content-Type": "application/json"]) { a, _ in a })
            #expect(mutation.status == 401, "\(mutation.text)")
            let stream = try await h.get("/subscribe/conformance:whoami", headers: expired)
            #expect(stream.status == 401, "a stream that can never deliver is refused before it starts")
        }
    }

    @Test("a token not valid yet (issued past the deployment's leeway ahead) is a 401 on every route, streams included")
    func notYetValidTokenIs401() async throws {
        let clock = TestClock<Duration>()
        let time = GatewayClock(clock)
        try await TestGateway.run(.inProcess, clock: time) { h in
            let early = [
                "Authorization":
                    "Bearer \(Self.jwt(subject: "early", expiresIn: 3600, issuedIn: 60, now: time.wallSeconds))"
            ]
            let query = try await h.get("/query/conformance:whoami", headers: early)
            #expect(query.status == 401, "\(query.text)")
            #expect(query.text.contains("valid in"), "\(query.text)")
            let stream = try await h.get("/subscribe/conformance:whoami", headers: early)
            #expect(stream.status == 401, "\(stream.text)")
            let batch = try await h.get("/query?q.me=conformance:whoami", headers: early)
            #expect(batch.status == 401, "\(batch.text)")
        }
    }

    @Test("a stream whose token expires sends an Unauthenticated error and ends; other callers carry on")
    func streamEndsAtExpiry() async throws {
        let clock = TestClock<Duration>()
        let time = GatewayClock(clock)
        try await TestGateway.run(.inProcess, clock: time) { h in
            let short = ["Authorization": "Bearer \(Self.jwt(subject: "brief", expiresIn: 60, now: time.wallSeconds))"]
            let long = [
                "Authorization": "Bearer \(Self.jwt(subject: "lasting", expiresIn: 3600, now: time.wallSeconds))"
            ]
            let expiring = try await h.openStream("/subscribe/conformance:whoami", headers: short)
            defer { expiring.close() }
            let lasting = try await h.openStream("/subscribe/conformance:whoami", headers: long)
            defer { lasting.close() }
            #expect(expiring.head.status == 200)
            let first = try #require(
                try await step("the expiring stream's first event") { try await expiring.nextEventAsync() })
            #expect(first.data.contains("brief"), "\(first.data)")
            let lastingFirst = try await step("the lasting stream's first event") { try await lasting.nextEventAsync() }
            #expect(lastingFirst?.data.contains("lasting") == true)

            // Past `exp` and Convex's 5 s leeway for presented tokens.
            let error = try #require(
                try await step("the expiring stream's error event") {
                    try await clock.advance(by: .seconds(70), until: { try await expiring.nextEventAsync() })
                },
                "an error event before the end")
            #expect(error.event == "fatal")
            let body = try #require(try? ConvexValue(plainJSON: Array(error.data.utf8)))
            #expect(body["error"]?["code"] == "Unauthenticated", "\(error.data)")
            let end = try await step("the expiring stream's end") { try await expiring.nextEventAsync() }
            #expect(end == nil, "the stream ends after the error")

            // Nothing more is served to the expired token; the other identity is untouched.
            let after = try await step("a query with the expired token") {
                try await h.get("/query/conformance:whoami", headers: short)
            }
            #expect(after.status == 401, "\(after.text)")
            let other = try await step("a query with the lasting token") {
                try await h.get("/query/conformance:whoami", headers: long)
            }
            #expect(other.status == 200)
            #expect(other.text.contains("lasting"))
        }
    }
}
