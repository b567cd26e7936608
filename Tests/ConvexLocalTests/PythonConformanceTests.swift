import ConvexLocal
import ConvexValues
import Foundation
import Logging
import TestSupport
import Testing

/// The official Python client (`convex==0.8.1`) against a deployment on a free loopback port.
@Suite(.timeLimit(.minutes(5)))
struct PythonConformanceTests {
    static let adminKey = "test-admin-key"

    static var quietLogger: Logger {
        var logger = Logger(label: "convex-local-test")
        logger.logLevel = .error
        return logger
    }

    func withDeployment(_ body: (LocalDeployment) async throws -> Void) async throws {
        try await withLocalDeployment(.init(port: 0, adminKey: Self.adminKey), logger: Self.quietLogger, body)
    }

    @Test func queryMutationActionAndErrors() async throws {
        try await withDeployment { deployment in
            expectPassed(try await PythonClient.run("basics.py", url: deployment.url))
            // The mutations reached the store the deployment serves.
            let team = try deployment.query("mlb:first_place_team", ["division": "AL Central"])
            #expect(team["wins"] == .int64(81))
        }
    }

    @Test func valuesRoundTripThroughEcho() async throws {
        try await withDeployment { deployment in
            expectPassed(try await PythonClient.run("values.py", url: deployment.url))
        }
    }

    @Test func paginatedQueriesPageAndStayLive() async throws {
        try await withDeployment { deployment in
            expectPassed(try await PythonClient.run("paginate.py", url: deployment.url))
        }
    }

    @Test func subscriptionFollowsMutations() async throws {
        try await withDeployment { deployment in
            expectPassed(try await PythonClient.run("subscribe.py", url: deployment.url))
        }
    }

    @Test func userAndAdminAuth() async throws {
        try await withDeployment { deployment in
            expectPassed(try await PythonClient.run("auth.py", url: deployment.url, [Self.adminKey]))
        }
    }

    /// Against a deployment with an auth config: tokens signed with keys made now pass; a tampered, wrong-issuer or
    /// expired one fails with Convex's messages over HTTP (401), and over the sync protocol its query never completes
    /// (the client reconnects after the `AuthError` with the same token, as against Convex).
    @Test func verifiedTokens() async throws {
        try await withLocalDeployment(AuthEndToEndTests.verifiedConfiguration, logger: Self.quietLogger) { deployment in
            let issuer = TestIssuer.shared
            var claims = TestIssuer.claims()
            claims.aud = ["app"]
            let valid = try await issuer.sign(claims)
            var other = claims
            other.sub = "intruder"
            var wrongIssuer = TestIssuer.claims(issuer: "https://elsewhere.test")
            wrongIssuer.aud = ["app"]
            var expired = claims
            // Real time: a token expired a minute ago against the deployment's real clock: no window.
            expired.exp = Int(Date().timeIntervalSince1970) - 60
            let tokens = [
                valid, try tampered(valid, other), try await issuer.sign(wrongIssuer), try await issuer.sign(expired),
            ]
            // The script's rejected clients run until the deployment has seen each reconnect (and they would
            // forever, as against Convex): then this file tells it to stop them, however long a loaded machine took.
            let seen = FileManager.default.temporaryDirectory.appendingPathComponent("reconnects-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: seen) }
            async let script = PythonClient.run("auth_verified.py", url: deployment.url, tokens + [seen.path])
            // Whether the Rust client reads the AuthError before the Close that follows it varies, so its
            // `lastCloseReason` is `AuthError: <message> for identity version Some(0)` only sometimes (else empty or
            // `ProtocolFailure`) and is not checked.
            let reconnected = await eventually(timeout: .seconds(40)) { deployment.recentCloseReasons.count >= 3 }
            #expect(reconnected, "\(deployment.recentCloseReasons)")
            FileManager.default.createFile(atPath: seen.path, contents: nil)
            expectPassed(try await script)
        }
    }

    @Test func subscriptionResumesAfterServerClose() async throws {
        try await withDeployment { deployment in
            async let script = PythonClient.run("reconnect_subscription.py", url: deployment.url)
            // The script's interpreter starts, imports the client and connects first: seconds on a loaded machine.
            try await waitUntil(timeout: .seconds(40)) {
                (try? deployment.query("conformance:counter", ["name": "ready-sub"])) == .int64(1)
            }
            let acceptedBefore = deployment.acceptedSyncConnections
            deployment.closeSyncConnections(code: 1011, reason: "TestClose")
            try await waitUntil {
                deployment.acceptedSyncConnections > acceptedBefore && deployment.syncConnectionCount == 1
            }
            _ = try deployment.mutation("mlb:record_win", ["team": "Dodgers"])
            expectPassed(try await script)
        }
    }

    @Test func resentMutationTakesEffectOnce() async throws {
        try await withDeployment { deployment in
            async let script = PythonClient.run("reconnect_mutation.py", url: deployment.url)
            // The script's interpreter starts, imports the client and connects first: seconds on a loaded machine.
            try await waitUntil(timeout: .seconds(40)) {
                (try? deployment.query("conformance:counter", ["name": "ready-mut"])) == .int64(1)
            }
            deployment.setStalled(true)
            _ = try deployment.mutation("conformance:increment", ["name": "stalled"])
            // The mutation commits, but its response is held by the stall.
            try await waitUntil { (try? deployment.query("conformance:counter", ["name": "once"])) == .int64(1) }
            let acceptedBefore = deployment.acceptedSyncConnections
            deployment.closeSyncConnections(code: 1011, reason: "TestClose")
            deployment.setStalled(false)
            expectPassed(try await script)
            #expect(deployment.acceptedSyncConnections > acceptedBefore, "the client reconnected")
            #expect(try deployment.query("conformance:counter", ["name": "once"]) == .int64(1))
        }
    }
}
