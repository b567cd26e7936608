import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization
import Testing

/// Verified tokens and live-session expiry over real sockets.
@Suite(.timeLimit(.minutes(1)))
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
    /// until it authenticates again, and resumes on the same socket with a fresh token.
    @Test func liveSessionExpiresAndResumesOnTheSameSocket() async throws {
        try await withLocalDeployment(.init(port: 0), logger: SyncWebSocketTests.quietLogger) { d in
            let now = Date().timeIntervalSince1970
            // exp is a whole second: this token lives 3 to 4 s, time enough for the first results to arrive before it
            // expires even while the rest of the suite loads the machine.
            let lifetime = 4
            let shortLived = try unsignedToken(
                TestClaims(iss: "https://dev", sub: "ann", exp: Int(now) + lifetime, iat: Int(now)))
            let fresh = try unsignedToken(
                TestClaims(iss: "https://dev", sub: "ann", exp: Int(now) + 600, iat: Int(now)))
            let seen = Mutex<[(ServerMessage, Double)]>([])
            let url = "ws://127.0.0.1:\(d.port)/api/sync"
            var logger = Logger(label: "raw-sync-client")
            logger.logLevel = .critical
            _ = try await WebSocketClient.connect(url: url, logger: logger) { inbound, outbound, _ in
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
                var expiredAt: Double?
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message, let decoded = try? ServerMessage(json: text) else { continue }
                    if case .ping = decoded { continue }
                    seen.withLock { $0.append((decoded, Date().timeIntervalSince1970)) }
                    switch decoded {
                    case .authError:
                        expiredAt = Date().timeIntervalSince1970
                        // Written while expired: must not reach the socket before the new token. The commit queues
                        // its wake-up on this socket's event stream before the Authenticate below is even sent, so the
                        // session handles the write while still expired.
                        _ = try d.mutation("conformance:increment", ["name": "expiry"])
                        try await outbound.write(
                            .text(ClientMessage.authenticate(.init(baseVersion: 1, token: .user(fresh))).jsonText))
                    case .transition(let t) where expiredAt != nil:
                        #expect(t.endVersion.identity == 2)
                        return
                    default:
                        break
                    }
                }
            }
            let messages = seen.withLock { $0 }
            guard let errorIndex = messages.firstIndex(where: { if case .authError = $0.0 { true } else { false } }),
                case .authError(let expiry) = messages[errorIndex].0, errorIndex + 2 == messages.count,
                case .transition(let resumed) = messages[errorIndex + 1].0
            else { Issue.record("\(messages.map(\.0))"); return }
            // Before: the Authenticate's and the query set's Transitions, with both results.
            let before = messages[..<errorIndex].flatMap { message -> [ServerMessage.StateModification] in
                if case .transition(let t) = message.0 { return t.modifications }
                return []
            }
            #expect(before.map(\.queryId).sorted() == [0, 1])
            #expect(
                expiry.error == "Convex token identity expired" && expiry.authUpdateAttempted == false
                    && expiry.baseVersion == 1)
            // At exp (a whole second), not before; nothing else is sent meanwhile, so only the deployment's own timer
            // can have sent it. The upper bound allows for a machine busy with the rest of the suite.
            let exp = Double(Int(now) + lifetime)
            let at = messages[errorIndex].1
            #expect(at >= exp && at < exp + 5, "AuthError at \(at), exp \(exp)")
            // The resumed Transition carries the write made while expired; whoami is unchanged, so not resent.
            #expect(resumed.modifications.map(\.queryId) == [1])
            if case .queryUpdated(_, let value, _, _)? = resumed.modifications.first { #expect(value == .int64(1)) }
        }
    }
}
