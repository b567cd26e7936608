import ConvexValues
import Foundation
import Testing

@testable import ConvexLocal

/// Token verification with Convex's rules and messages (`crates/authentication/src/lib.rs`), against keys made at
/// test time.
@Suite(.timeLimit(.minutes(5)))
struct TokenVerifierTests {
    /// Generous: the whole suite shares half a core in load mode, and a loopback key server then answers late.
    static let keyFetchTimeout: Duration = .seconds(60)

    let issuer = TestIssuer.shared
    static let now: Double = 1_800_000_000

    func verifier(applicationID: String? = nil, algorithm: AuthProvider.Algorithm = .rs256) async throws
        -> TokenVerifier
    {
        try await TokenVerifier(
            config: AuthConfig(providers: [
                .customJWT(
                    issuer: TestIssuer.issuer, jwks: issuer.jwksDataURI, algorithm: algorithm,
                    applicationID: applicationID)
            ]))
    }

    func expectRejected(
        _ token: String, by verifier: TokenVerifier, now: Double = Self.now, code: String, message: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            let identity = try await verifier.identity(for: token, now: now)
            Issue.record("accepted as \(identity.tokenIdentifier)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(error.message == message, sourceLocation: sourceLocation)
            #expect(!error.isBadRequest, sourceLocation: sourceLocation)
        }
    }

    @Test func signedTokensOfBothAlgorithmsGiveTheirIdentity() async throws {
        let claims = TestIssuer.claims(now: Self.now)
        let rsaToken = try await issuer.sign(claims, with: .rsa)
        let identity = try await verifier().identity(for: rsaToken, now: Self.now)
        #expect(identity.tokenIdentifier == "https://issuer.test|user-1")
        #expect(identity.value["name"] == "Ann")
        #expect(identity.expiration == Self.now + 3600)

        let ecToken = try await issuer.sign(claims, with: .ec)
        #expect(try await verifier(algorithm: .es256).identity(for: ecToken, now: Self.now).subject == "user-1")
    }

    @Test func badSignaturesAndKeysAreRejectedWithTheKeyID() async throws {
        let verifier = try await verifier()
        let claims = TestIssuer.claims(now: Self.now)
        let good = try await issuer.sign(claims, with: .rsa)
        var other = claims
        other.sub = "someone-else"
        let kidMessage = { (kid: String) in
            "Could not decode token. The JWT's 'kid' (key ID) header is '\(kid)', does this key match any key in the provider's JWKS?"
        }
        await expectRejected(
            try tampered(good, other), by: verifier, code: "InvalidAuthHeader", message: kidMessage("rsa-1"))
        // Signed by a key the JWKS does not have, under an unknown and under a published key ID.
        await expectRejected(
            try await issuer.sign(claims, with: .unpublished), by: verifier, code: "InvalidAuthHeader",
            message: kidMessage("ec-unpublished"))
        await expectRejected(
            try await issuer.sign(claims, with: .unpublished, kid: "rsa-1"), by: verifier,
            code: "InvalidAuthHeader", message: kidMessage("rsa-1"))
        // A published key, but not the provider's algorithm.
        await expectRejected(
            try await issuer.sign(claims, with: .ec), by: verifier, code: "InvalidAuthHeader",
            message: kidMessage("ec-1"))
        await expectRejected(
            try await issuer.sign(claims, with: .ecWithoutKID), by: try await self.verifier(algorithm: .es256),
            code: "InvalidAuthHeader",
            message: "Could not decode token. JWT may be missing a 'kid' (key ID) header.")
        await expectRejected(
            try unsignedToken(claims), by: verifier, code: "InvalidAuthHeader",
            message: "Could not decode token. JWT may be missing a 'kid' (key ID) header.")
    }

    @Test func issuerAndAudienceSelectTheProvider() async throws {
        let claims = TestIssuer.claims(issuer: "https://other.test", now: Self.now)
        await expectRejected(
            try await issuer.sign(claims), by: try await verifier(), code: "NoAuthProvider",
            message:
                "No auth provider found matching the given token. Check that your JWT's issuer and audience match one of your configured providers: [CustomJWT(issuer=https://issuer.test, app_id=none)]"
        )
        var audienced = TestIssuer.claims(now: Self.now)
        let withApp = try await verifier(applicationID: "app-1")
        await expectRejected(
            try await issuer.sign(audienced), by: withApp, code: "NoAuthProvider",
            message:
                "No auth provider found matching the given token. Check that your JWT's issuer and audience match one of your configured providers: [CustomJWT(issuer=https://issuer.test, app_id=app-1)]"
        )
        audienced.aud = ["other", "app-1"]
        #expect(try await withApp.identity(for: try await issuer.sign(audienced), now: Self.now).subject == "user-1")
        // Convex adds https:// to an issuer without a scheme and ignores a trailing slash.
        var bare = TestIssuer.claims(issuer: "issuer.test/", now: Self.now)
        bare.aud = nil
        #expect(try await verifier().identity(for: try await issuer.sign(bare), now: Self.now).issuer == "issuer.test/")
        var noIssuer = TestIssuer.claims(now: Self.now)
        noIssuer.iss = nil
        await expectRejected(
            try await issuer.sign(noIssuer), by: try await verifier(), code: "InvalidAuthHeader",
            message:
                "Missing issuer claim ('iss') in JWT payload. The JWT must include an 'iss' claim that matches one of your configured auth providers."
        )
        let empty = try await TokenVerifier(config: AuthConfig(providers: []))
        await expectRejected(
            try await issuer.sign(TestIssuer.claims(now: Self.now)), by: empty, code: "NoAuthProvider",
            message:
                "No auth provider found matching the given token (no providers configured). Check convex/auth.config.ts."
        )
    }

    @Test(arguments: [
        // Expired 6 s ago: past the 5 s leeway.
        (
            TestClaims(iss: TestIssuer.issuer, sub: "u", exp: Int(now) - 6, iat: Int(now) - 60),
            "Could not validate token: Token expired 6 seconds ago"
        ),
        (
            TestClaims(iss: TestIssuer.issuer, sub: "u", exp: Int(now) + 60, nbf: Int(now) + 6, iat: Int(now)),
            "Could not validate token: Token will be valid in 6 seconds"
        ),
        (
            TestClaims(iss: TestIssuer.issuer, sub: "u", exp: Int(now) + 60, iat: Int(now) + 10),
            "Could not validate token: Token will be valid in 10 seconds"
        ),
        (
            TestClaims(iss: TestIssuer.issuer, exp: Int(now) + 60, iat: Int(now)),
            "Could not verify token claim. Check that the JWT contains valid claims and matches your auth provider configuration."
        ),
        (
            TestClaims(iss: TestIssuer.issuer, sub: "u", iat: Int(now)),
            "Could not verify token claim. Check that the JWT contains valid claims and matches your auth provider configuration."
        ),
    ])
    func claimsAreCheckedWithConvexLeeway(claims: TestClaims, message: String) async throws {
        await expectRejected(
            try await issuer.sign(claims), by: try await verifier(), code: "InvalidAuthHeader", message: message)
    }

    @Test func timesWithinTheLeewayAreAccepted() async throws {
        let verifier = try await verifier()
        let now = Int(Self.now)
        for claims in [
            TestClaims(iss: TestIssuer.issuer, sub: "u", exp: now - 5, iat: now - 60),
            TestClaims(iss: TestIssuer.issuer, sub: "u", exp: now + 60, nbf: now + 5, iat: now + 5),
        ] {
            #expect(try await verifier.identity(for: try await issuer.sign(claims), now: Self.now).subject == "u")
        }
    }

    @Test(arguments: [
        "", "a.b", "not-a-jwt", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln",
        "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOiJzb29uIn0.c2ln",
    ])
    func malformedTokensCannotBeParsed(token: String) async throws {
        let message =
            "Could not parse JWT payload. Check that the token is a valid JWT format with three base64-encoded parts separated by dots."
        await expectRejected(token, by: try await verifier(), code: "InvalidAuthHeader", message: message)
        await expectRejected(token, by: TokenVerifier(), code: "InvalidAuthHeader", message: message)
    }

    @Test func developmentModeTakesUnsignedTokensButChecksTheirTimes() async throws {
        let verifier = TokenVerifier()
        let now = Int(Self.now)
        let fresh = try unsignedToken(TestClaims(iss: "https://anyone", sub: "dev", exp: now + 2, iat: now))
        #expect(try await verifier.identity(for: fresh, now: Self.now).tokenIdentifier == "https://anyone|dev")
        // No times at all is fine (demo tokens), like a token without an issuer.
        #expect(
            try await verifier.identity(for: try unsignedToken(TestClaims(sub: "dev")), now: Self.now).subject == "dev")
        await expectRejected(
            try unsignedToken(TestClaims(sub: "dev", exp: now - 6)), by: verifier, code: "InvalidAuthHeader",
            message: "Could not validate token: Token expired 6 seconds ago")
        await expectRejected(
            try unsignedToken(TestClaims(sub: "dev", exp: now + 60, nbf: now + 30)), by: verifier,
            code: "InvalidAuthHeader", message: "Could not validate token: Token will be valid in 30 seconds")
    }

    @Test func keysFromAFileAndOverHTTP() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json").path
        try Data(issuer.jwksJSON.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let token = try await issuer.sign(TestIssuer.claims())
        // Real time: the verifier is given this `now`; tokens are valid for an hour around it.
        let now = Date().timeIntervalSince1970
        for jwks in ["file:\(path)", "file://\(path)"] {
            let fromFile = try await TokenVerifier(
                config: AuthConfig(providers: [
                    .customJWT(issuer: TestIssuer.issuer, jwks: jwks, algorithm: .rs256, applicationID: nil)
                ]))
            #expect(try await fromFile.identity(for: token, now: now).subject == "user-1")
        }
        try await withHTTPServer([
            "/jwks.json": ("application/json; charset=utf-8", issuer.jwksJSON),
            "/text": ("text/plain", issuer.jwksJSON),
            "/garbage": ("application/jwk-set+json", "{}"),
        ]) { base in
            func remote(_ path: String) async throws -> TokenVerifier {
                try await TokenVerifier(
                    config: AuthConfig(
                        providers: [
                            .customJWT(
                                issuer: TestIssuer.issuer, jwks: base + path, algorithm: .rs256, applicationID: nil)
                        ], keyFetchTimeout: Self.keyFetchTimeout))
            }
            #expect(try await remote("/jwks.json").identity(for: token, now: now).subject == "user-1")
            await expectRejected(
                token, by: try await remote("/text"), now: now, code: "InvalidAuthHeader",
                message:
                    "Invalid Content-Type 'text/plain' when fetching JWKS from '\(base)/text'. Expected 'application/json' or 'application/jwk-set+json'."
            )
            await expectRejected(
                token, by: try await remote("/garbage"), now: now, code: "InvalidAuthHeader",
                message:
                    "Invalid JWKS response body from '\(base)/garbage'. The response is not valid JSON or doesn't match the expected JWKS format."
            )
            await expectRejected(
                token, by: try await remote("/missing"), now: now, code: "InvalidAuthHeader",
                message:
                    "Could not fetch JWKS from URL '\(base)/missing': HTTP 404 Not Found. Check that the URL is correct and accessible."
            )
        }
    }

    @Test func oidcProvidersAreFoundThroughDiscovery() async throws {
        // Real time: the verifier is given this `now`; tokens are valid for an hour around it.
        let now = Date().timeIntervalSince1970
        // The discovery document must name the issuer: the server's own URL is the issuer.
        try await withHTTPServer([
            "/.well-known/openid-configuration": (
                "application/json", #"{"issuer": "{BASE}", "jwks_uri": "{BASE}/keys"}"#
            ),
            "/keys": ("application/json", issuer.jwksJSON),
        ]) { base in
            let verifier = try await TokenVerifier(
                config: AuthConfig(
                    providers: [.oidc(domain: base, applicationID: "client-1")], keyFetchTimeout: Self.keyFetchTimeout))
            var claims = TestIssuer.claims(issuer: base, now: now)
            claims.aud = ["client-1"]
            #expect(try await verifier.identity(for: try await issuer.sign(claims), now: now).issuer == base)
            var expired = claims
            expired.exp = Int(now) - 60
            await expectRejected(
                try await issuer.sign(expired), by: verifier, now: now, code: "Unauthenticated",
                message:
                    "Could not verify OIDC token claim. Check that the token signature is valid and the token hasn't expired."
            )
            let wrongDomain = try await TokenVerifier(
                config: AuthConfig(
                    providers: [.oidc(domain: base + "/nowhere", applicationID: "client-1")],
                    keyFetchTimeout: Self.keyFetchTimeout))
            var elsewhere = claims
            elsewhere.iss = base + "/nowhere"
            let elsewhereToken = try await issuer.sign(elsewhere)
            do throws(AuthenticationError) {
                _ = try await wrongDomain.identity(for: elsewhereToken, now: now)
                Issue.record("discovery of a missing document must fail")
            } catch {
                #expect(error.code == "AuthProviderDiscoveryFailed" && error.isBadRequest)
                #expect(error.message.hasPrefix("Auth provider discovery of \(base)/nowhere failed: 404"))
            }
        }
    }

    @Test(arguments: [
        (
            #"{"providers": [{"type": "customJwt", "issuer": "i", "jwks": "data:,{}", "algorithm": "HS256"}]}"#,
            #"Provider 0: unsupported algorithm "HS256" (use RS256 or ES256)"#
        ),
        (
            #"{"providers": [{"type": "customJwt", "issuer": "i", "algorithm": "RS256"}]}"#,
            #"Provider 0 is missing "jwks""#
        ),
        (
            #"{"providers": [{"type": "customJwt", "issuer": "i", "jwks": "ftp://x", "algorithm": "RS256"}]}"#,
            #"Provider 0: "jwks" must be an http(s) URL, a file: path or a data: URI"#
        ),
        (#"{"providers": [{"domain": "https://d"}]}"#, #"Provider 0 is missing "applicationID""#),
        (
            #"{"providers": [{"domain": "https://d", "applicationID": "a", "issuer": "x"}]}"#,
            #"Provider 0: unknown key "issuer" (allowed: applicationID, domain)"#
        ),
        (
            #"{"providers": [{"type": "oidc", "domain": "d"}]}"#,
            #"Provider 0: unknown type "oidc" (use "customJwt", or no type for OIDC)"#
        ),
        (#"{"provider": []}"#, #"The auth config must be a JSON object {"providers": [...]}"#),
        (#"[1"#, "The auth config is not valid JSON"),
    ])
    func badConfigsAreRefusedClearly(json: String, message: String) {
        #expect(throws: AuthConfigError.self) { try AuthConfig(json: Array(json.utf8)) }
        do {
            _ = try AuthConfig(json: Array(json.utf8))
        } catch {
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
    }

    @Test func unusableLocalKeySetsFailAtStart() async throws {
        for (jwks, message) in [
            ("data:application/json;base64,!!!", "Invalid JWKS data URL"),
            ("data:,{\"keys\":[{\"kty\":\"RSA\"}]}", "Invalid JWKS in the data: URI"),
            ("file:/nonexistent/jwks.json", "Cannot read the JWKS file /nonexistent/jwks.json"),
        ] {
            do {
                _ = try await TokenVerifier(
                    config: AuthConfig(providers: [
                        .customJWT(issuer: "i", jwks: jwks, algorithm: .rs256, applicationID: nil)
                    ]))
                Issue.record("\(jwks) accepted")
            } catch {
                #expect(error.message.hasPrefix(message), "\(error.message)")
            }
        }
    }
}
