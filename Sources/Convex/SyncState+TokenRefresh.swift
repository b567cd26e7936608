import ConvexSyncProtocol
import Foundation

/// Token refresh, as convex-js' `AuthenticationManager` does it: once the deployment confirms a provider's token, plan
/// a refresh before it expires; ask the provider with `forceRefresh`; send the new token on the open socket.
extension SyncState {
    mutating func invalidateTokenRefresh() {
        refreshGeneration &+= 1
        refreshPlannedFor = nil
    }

    /// Called after ``Effects/tokenConfirmed``: when to fetch the next token, from the confirmed token's `exp` and
    /// `iat` and the wall clock `now` (seconds since 1970). `nil` when there is nothing to plan (no provider token,
    /// or a token without `exp`/`iat` or living 2 s or less, which convex-js does not refresh either).
    mutating func planTokenRefresh(now: Double, leeway: Duration) -> TokenRefreshPlan? {
        guard phase == .connected, auth == .provider, case .user(let jwt)? = currentToken,
            refreshPlannedFor != identityVersion
        else { return nil }
        refreshPlannedFor = identityVersion
        guard let delay = Self.tokenRefreshDelay(jwt: jwt, now: now, leeway: leeway) else { return nil }
        refreshGeneration &+= 1
        return TokenRefreshPlan(generation: refreshGeneration, delay: delay)
    }

    /// How long until a confirmed token should be replaced: its remaining life minus a lead of
    /// `min(leeway, lifetime / 2)` (half the life of a short token, so a machine that stalls for a second still refreshes in
    /// time). The remaining life is `exp - now`, unless the local clock disagrees with the
    /// issuer's (`exp` already passed, or more than `exp - iat` away), in which case the full lifetime counts from
    /// now, as convex-js does for fresh tokens.
    static func tokenRefreshDelay(jwt: String, now: Double, leeway: Duration) -> Duration? {
        guard let (issuedAt, expiration) = tokenTimes(jwt) else { return nil }
        let lifetime = expiration - issuedAt
        guard lifetime > 2 else { return nil }
        var remaining = expiration - now
        if remaining <= 0 || remaining > lifetime { remaining = lifetime }
        let leewaySeconds = leeway.seconds
        let lead = min(leewaySeconds, lifetime / 2)
        return .milliseconds(Int64((max(0, remaining - lead) * 1000).rounded()))
    }

    /// `iat` and `exp` of a JWT's payload (read, not verified).
    static func tokenTimes(_ jwt: String) -> (issuedAt: Double, expiration: Double)? {
        guard let claims = UnverifiedJWT.claims(jwt), case .float64(let iat)? = claims["iat"],
            case .float64(let exp)? = claims["exp"], iat.isFinite, exp.isFinite
        else { return nil }
        return (iat, exp)
    }

    /// The timer of a plan fired: whether to ask the provider now (with `forceRefresh`).
    func tokenRefreshIsDue(generation: UInt64) -> Bool {
        generation == refreshGeneration && phase == .connected && auth == .provider
    }

    /// The provider answered a planned refresh: the new token is sent on the open socket (the deployment swaps the
    /// identity; unchanged query results are not sent again). No token is treated like a rejected one.
    mutating func tokenRefreshed(_ jwt: String?, generation: UInt64) -> Effects {
        guard tokenRefreshIsDue(generation: generation) else { return Effects() }
        guard let jwt else { return tokenRefreshFailed("Token provider returned no token", generation: generation) }
        var effects = Effects()
        let token = AuthenticationToken.user(jwt)
        // The same token again: nothing to send; when it expires the deployment says so and the client reconnects
        // with a forced refresh.
        guard token != currentToken else { return effects }
        currentToken = token
        effects.send.append(.authenticate(.init(baseVersion: identityVersion, token: token)))
        identityVersion += 1
        return effects
    }

    /// The provider failed during a planned refresh: the socket is dropped and the client stops with
    /// ``Phase/authenticationFailed(_:)``, as when the deployment rejects a token twice.
    mutating func tokenRefreshFailed(_ message: String, generation: UInt64) -> Effects {
        var effects = Effects()
        guard tokenRefreshIsDue(generation: generation) else { return effects }
        pendingAuthFailure = message
        effects.resetConnection = message
        return effects
    }
}
