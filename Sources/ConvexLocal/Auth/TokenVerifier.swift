import ConvexValues
import JWTKit

/// Turns a user JWT into the identity functions see, the way Convex's `validate_id_token`
/// (`crates/authentication/src/lib.rs`) does, with its error codes and messages.
///
/// With an ``AuthConfig`` a token must match a provider by issuer (and audience when the provider has an
/// application ID), be signed by one of the provider's keys named by its `kid` with the provider's algorithm, and
/// pass the time checks of ``TokenClaims/checkTimes(now:)``. Without one (the development mode) any well-formed JWT
/// is accepted unsigned, but its `exp`, `nbf` and `iat` are still checked.
final class TokenVerifier: Sendable {
    private struct Provider: Sendable {
        let config: AuthProvider
        let keys: ProviderKeys
    }

    /// `nil`: unverified development mode.
    private let providers: [Provider]?

    /// The development mode: tokens are not verified.
    init() {
        providers = nil
    }

    /// Verifies against `config`'s providers, reading local key sets now.
    /// - Throws: ``AuthConfigError`` when a provider's local key set is unusable.
    init(config: AuthConfig) async throws(AuthConfigError) {
        var providers: [Provider] = []
        for provider in config.providers {
            providers.append(
                Provider(config: provider, keys: try await ProviderKeys(provider, fetchTimeout: config.keyFetchTimeout))
            )
        }
        self.providers = providers
    }

    private static let couldNotVerifyClaims = AuthenticationError.invalidAuthHeader(
        "Could not verify token claim. Check that the JWT contains valid claims and matches your auth provider configuration."
    )
    private static let couldNotVerifyOIDC = AuthenticationError.unauthenticated(
        "Could not verify OIDC token claim. Check that the token signature is valid and the token hasn't expired.")

    /// The identity of `token` at `now` (seconds since 1970).
    /// - Throws: ``AuthenticationError`` with Convex's code and message.
    func identity(for token: String, now: Double) async throws(AuthenticationError) -> UserIdentity {
        let token = token.trimmingCharacters(in: .whitespaces)
        let claims = try TokenClaims(jwt: token)
        guard let providers else {
            try claims.checkTimes(now: now)
            return UserIdentity(claims: claims.claims)
        }
        guard let issuer = claims.issuer else {
            throw .invalidAuthHeader(
                "Missing issuer claim ('iss') in JWT payload. The JWT must include an 'iss' claim that matches one of your configured auth providers."
            )
        }
        guard let provider = providers.first(where: { $0.config.matches(issuer: issuer, audiences: claims.audiences) })
        else {
            throw .noAuthProvider(Self.noProviderMessage(providers.map(\.config)))
        }
        switch provider.config {
        case .customJWT(_, _, let algorithm, _):
            let keys = try await provider.keys.keys(keyID: claims.keyID)
            let decodeFailure: AuthenticationError =
                claims.keyID.map {
                    .invalidAuthHeader(
                        "Could not decode token. The JWT's 'kid' (key ID) header is '\($0)', does this key match any key in the provider's JWKS?"
                    )
                } ?? .invalidAuthHeader("Could not decode token. JWT may be missing a 'kid' (key ID) header.")
            guard let kid = claims.keyID, keys.keyIDs.contains(kid), claims.algorithm == algorithm.rawValue,
                await Self.signatureVerifies(token, with: keys)
            else { throw decodeFailure }
            try claims.checkTimes(now: now)
            guard claims.subject != nil, claims.expiration != nil else { throw Self.couldNotVerifyClaims }
        case .oidc:
            let keys = try await provider.keys.keys(keyID: claims.keyID)
            // Convex's OIDC verifier takes RS256 and EdDSA, a single audience equal to the application ID, and a
            // token that has not expired.
            guard let kid = claims.keyID, keys.keyIDs.contains(kid),
                ["RS256", "EdDSA"].contains(claims.algorithm ?? ""),
                claims.audiences == [provider.config.applicationID ?? ""], claims.subject != nil,
                claims.expiration != nil, (try? claims.checkTimes(now: now)) != nil,
                await Self.signatureVerifies(token, with: keys)
            else { throw Self.couldNotVerifyOIDC }
        }
        return UserIdentity(claims: claims.claims)
    }

    private static func signatureVerifies(_ token: String, with keys: ProviderKeys.KeySet) async -> Bool {
        (try? await keys.collection.verify(token, as: SignedClaims.self)) != nil
    }

    private static func noProviderMessage(_ providers: [AuthProvider]) -> String {
        if providers.isEmpty {
            return
                "No auth provider found matching the given token (no providers configured). Check convex/auth.config.ts."
        }
        return
            "No auth provider found matching the given token. Check that your JWT's issuer and audience match one of your configured providers: [\(providers.map(\.summary).joined(separator: ", "))]"
    }
}

/// jwt-kit checks the signature only; the claims are checked by ``TokenClaims`` with Convex's rules.
private struct SignedClaims: JWTPayload {
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
