import ConvexValues
import Foundation

/// The user a function runs for: the claims of the caller's JWT.
///
/// With an ``AuthConfig`` the deployment verifies a token before it becomes an identity; without one it accepts
/// any well-formed JWT unsigned (development only), checking only its `exp`, `nbf` and `iat`.
public struct UserIdentity: Sendable, Hashable {
    /// `issuer|subject`, as Convex forms it.
    public var tokenIdentifier: String
    public var subject: String
    public var issuer: String
    /// All claims of the token (numbers as float64).
    public var claims: [String: ConvexValue]

    public init(tokenIdentifier: String, subject: String, issuer: String, claims: [String: ConvexValue]) {
        self.tokenIdentifier = tokenIdentifier
        self.subject = subject
        self.issuer = issuer
        self.claims = claims
    }

    /// Reads the claims of a JWT without verifying its signature or times.
    /// - Throws: ``AuthenticationError`` (`InvalidAuthHeader`) when the text is not a JWT with a JSON-object payload.
    public init(jwt: String) throws(AuthenticationError) {
        self.init(claims: try TokenClaims(jwt: jwt).claims)
    }

    /// The `exp` claim (seconds since 1970): a live sync session's identity ends then.
    public var expiration: Double? { claims["exp"]?.numberValue }

    /// Builds an identity from claims (also used for an admin acting as a user).
    public init(claims: [String: ConvexValue]) {
        func text(_ key: String) -> String? {
            switch claims[key] {
            case .string(let s)?: s
            case .float64(let d)?: String(d)
            default: nil
            }
        }
        let issuer = text("iss") ?? text("issuer") ?? ""
        let subject = text("sub") ?? text("subject") ?? ""
        self.init(
            tokenIdentifier: text("tokenIdentifier") ?? "\(issuer)|\(subject)", subject: subject, issuer: issuer,
            claims: claims)
    }

    /// The identity as `ctx.auth.getUserIdentity()` returns it in Convex: `tokenIdentifier`, `subject`, `issuer`
    /// and the remaining claims.
    public var value: ConvexValue {
        var fields: [String: ConvexValue] = [:]
        for (key, claim) in claims where !["iss", "sub", "aud", "iat", "exp", "nbf", "jti"].contains(key) {
            if !key.hasPrefix("$") { fields[key] = claim }
        }
        fields["tokenIdentifier"] = .string(tokenIdentifier)
        fields["subject"] = .string(subject)
        fields["issuer"] = .string(issuer)
        return .object(fields)
    }
}

/// Who is calling a function.
public enum CallerIdentity: Sendable, Hashable {
    case unauthenticated
    case user(UserIdentity)
    /// The configured admin key; may act as a user.
    case admin(actingAs: UserIdentity?)

    public var isAdmin: Bool {
        if case .admin = self { return true }
        return false
    }

    /// The user identity functions see (`nil` when unauthenticated or admin without acting-as).
    public var user: UserIdentity? {
        switch self {
        case .unauthenticated: nil
        case .user(let u): u
        case .admin(let u): u
        }
    }
}

/// Who a caller is, without the times and other claims of its current token: a user is its `tokenIdentifier`, so a
/// refreshed token of the same user is the same caller (Convex's `InertIdentity`, which it records beside a session's
/// requests). What a mutation's recorded result is keyed by.
enum InertIdentity: Sendable, Hashable {
    case unauthenticated
    case user(tokenIdentifier: String)
    /// The admin key, acting as the user of that `tokenIdentifier` or as nobody.
    case admin(actingAs: String?)

    init(_ caller: CallerIdentity) {
        switch caller {
        case .unauthenticated: self = .unauthenticated
        case .user(let user): self = .user(tokenIdentifier: user.tokenIdentifier)
        case .admin(let user): self = .admin(actingAs: user?.tokenIdentifier)
        }
    }

    /// The bytes it takes in a key, for the caches that count theirs.
    var keyBytes: Int {
        switch self {
        case .unauthenticated, .admin(nil): 1
        case .user(let identifier), .admin(let identifier?): 1 + identifier.utf8.count
        }
    }
}
