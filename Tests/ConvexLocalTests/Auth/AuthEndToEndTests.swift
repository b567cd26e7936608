import Clocks
import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization
import Testing
import TimeSource

/// Verified tokens and live-session expiry over real sockets.
@Suite(.timeLimit(.minutes(5)))
struct AuthEndToEndTests {
    static var verifiedConfiguration: LocalDeployment.Configuration {
        .init(
            port: 0, adminKey: "k",
            authConfig: AuthConfig(providers: [
                .customJWT(
                    issuer: TestIssuer.issuer, jwks: TestIssuer.shared.jwksDataURI, algorithm: .rs256,
                    applicationID: "app")
            ]))
    }

    @Test func httpAPIAcceptsOnlyVerifiedTokens() async throws {
        try await withLocalDeployment(Self.verifiedConfiguration, logger: SyncWebSocketTests.quietLogger) { d in
            var claims = TestIssuer.claims()
            claims.aud = ["app"]
            let token = try await TestIssuer.shared.sign(claims)
            let http = HTTPAPITests()
            let whoami = #"{"path":"conformance:whoami","args":{}}"#
            let ok = try await http.send(
                d, "POST", "/api/query", body: whoami, headers: ["Authorization": "Bearer \(token)"])
            #expect(ok.json?["value"]?["identity"]?["tokenIdentifier"] == "https://issuer.test|user-1", "\(ok.body)")
            var other = claims
            other.sub = "intruder"
            let forged = try await http.send(
                d, "POST", "/api/query", body: whoami,
                headers: ["Authorization": "Bearer \(try tampered(token, other))"])
            #expect(forged.status == 401)
            #expect(
                forged.json == [
                    "code": "InvalidAuthHeader",
                    "message":
                        "Could not decode token. The JWT's 'kid' (key ID) header is 'rsa-1', does this key match any key in the provider's JWKS?",
                ])
            let unsigned = try await http.send(
                d, "POST", "/api/query", body: whoami,
                headers: ["Authorization": "Bearer \(try unsignedToken(claims))"])
            #expect(unsigned.status == 401 && unsigned.json?["code"] == "InvalidAuthHeader")
            var expired = claims
            // Real time: a token expired a minute ago against the deployment's real clock: no window.
            expired.exp = Int(Date().timeIntervalSince1970) - 60
            let late = try await http.send(
                d, "POST", "/api/query", body: whoami,
                headers: ["Authorization": "Bearer \(try await TestIssuer.shared.sign(expired))"])
            #expect(late.status == 401)
            #expect(late.body.contains("Could not validate token: Token expired "), "\(late.body)")
        }
    }

    @Test func rejectedAuthenticateIsAnAuthUpdateFailure() async throws {
        try await withLocalDeployment(Self.verifiedConfiguration, logger: SyncWebSocketTests.quietLogger) { d in
            let wrongIssuer = try await TestIssuer.shared.sign(TestIssuer.claims(issuer: "https://elsewhere.test"))
            let result = try await syncExchange(
                d,
                send: [
                    connectFrame(),
                    ClientMessage.authenticate(.init(baseVersion: 0, token: .user(wrongIssuer))).jsonText,
                ])
            guard case .authError(let e)? = result.messages.last else { Issue.record("\(result.messages)"); return }
            #expect(e.authUpdateAttempted == true && e.baseVersion == 0)
            #expect(
                e.error
                    == "No auth provider found matching the given token. Check that your JWT's issuer and audience match one of your configured providers: [CustomJWT(issuer=https://issuer.test, app_id=app)]"
            )
        }
    }

    /// A session whose token expires gets `AuthError` (`authUpdateAttempted: false`) at `exp`, is served nothing
    /// until it authenticates again, and resumes on the same socket with a fresh token. The deployment runs on a test
    /// clock the test moves: a second before `exp` the session is still served, and past it the error comes.
    @Test func liveSessionExpiresAndResumesOnTheSameSocket() async throws {
        let clock = TestClock<Duration>()
        let time = ElapsedClock(clock)
        try await withLocalDeployment(.init(port: 0, clock: time), logger: SyncWebSocketTests.quietLogger) { d in
            let now = time.wallSeconds.rounded(.down)
            let exp = now + 60
            let shortLived = try unsignedToken(TestClaims(iss: "https://dev", sub: "ann", exp: Int(exp), iat: Int(now)))
            let fresh = try unsignedToken(
                TestClaims(iss: "https://dev", sub: "ann", exp: Int(now) + 3600, iat: Int(now)))
            let seen = Mutex<[ServerMessage]>([])
            let url = "ws://127.0.0.1:\(d.port)/api/sync"
            var logger = Logger(label: "raw-sync-client")
            logger.logLevel = .critical
            _ = try await connectRetryingTimeouts(url: url, logger: logger) { inbound, outbound, _ in
                for frame in [
                    connectFrame(),
                    ClientMessage.authenticate(.init(baseVersion: 0, token: .user(shortLived))).jsonText,
                    ClientMessage.modifyQuerySet(
                        .init(
                            baseVersion: 0, newVersion: 1,
                            modifications: [
                                .add(.init(queryId: 0, udfPath: "conformance:whoami")),
                                .add(.init(queryId: 1, udfPath: "conformance:counter", args: ["name": "expiry"])),
                            ])
                    ).jsonText,
                ] { try await outbound.write(.text(frame)) }
                enum Step { case firstResults, writeBeforeExpiry, expiry, resumed }
                var step = Step.firstResults
                var firstResults = Set<Int>()
                var mover: Task<Void, Never>?
                defer { mover?.cancel() }
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message, let decoded = try? ServerMessage(json: text) else { continue }
                    if case .ping = decoded { continue }
                    seen.withLock { $0.append(decoded) }
                    switch (step, decoded) {
                    case (.firstResults, .transition(let t)):
                        firstResults.formUnion(t.modifications.map { Int($0.queryId) })
                        guard firstResults == [0, 1] else { continue }
                        // A second before `exp`: a write still reaches the session.
                        step = .writeBeforeExpiry
                        await clock.advance(by: .seconds(exp - 1 - time.wallSeconds))
                        _ = try d.mutation("conformance:increment", ["name": "expiry"])
                    case (.writeBeforeExpiry, .transition):
                        // Past `exp`, a second at a time until the error comes: the expiry timer is armed on the task
                        // that handled the Authenticate, which a later move reaches even if it slept after the first.
                        step = .expiry
                        mover = Task {
                            for _ in 0..<100 where !Task.isCancelled {
                                await clock.advance(by: .seconds(1))
                                // Real time: lets the woken timer reach the socket before the next move.
                                try? await Task.sleep(for: .milliseconds(50))
                            }
                        }
                    case (.expiry, .authError):
                        mover?.cancel()
                        step = .resumed
                        // Written while expired: must not reach the socket before the new token. The commit queues
                        // its wake-up on this socket's event stream before the Authenticate below is even sent, so the
                        // session handles the write while still expired.
                        _ = try d.mutation("conformance:increment", ["name": "expiry"])
                        try await outbound.write(
                            .text(ClientMessage.authenticate(.init(baseVersion: 1, token: .user(fresh))).jsonText))
                    case (.resumed, .transition(let t)):
                        #expect(t.endVersion.identity == 2)
                        return
                    default:
                        break
                    }
                }
            }
            let messages = seen.withLock { $0 }
            guard let errorIndex = messages.firstIndex(where: { if case .authError = $0 { true } else { false } }),
                case .authError(let expiry) = messages[errorIndex], errorIndex + 2 == messages.count,
                case .transition(let resumed) = messages[errorIndex + 1]
            else { Issue.record("\(messages)"); return }
            // Before: the Authenticate's and the query set's Transitions with both results, then the write made a
            // second before `exp`.
            let before = messages[..<errorIndex].flatMap { message -> [ServerMessage.StateModification] in
                if case .transition(let t) = message { return t.modifications }
                return []
            }
            #expect(Set(before.map(\.queryId)) == [0, 1])
            #expect(
                expiry.error == "Convex token identity expired" && expiry.authUpdateAttempted == false
                    && expiry.baseVersion == 1)
            // The resumed Transition carries the write made while expired; whoami is unchanged, so not resent.
            #expect(resumed.modifications.map(\.queryId) == [1])
            if case .queryUpdated(_, let value, _, _)? = resumed.modifications.first { #expect(value == .int64(2)) }
        }
    }
}
