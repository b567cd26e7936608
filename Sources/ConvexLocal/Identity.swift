import ConvexValues
import Foundation

/// The user a function runs for: the claims of the caller's JWT.
///
/// This local deployment accepts any well-formed JWT (three base64url parts whose middle part is a JSON object)
/// and does **not** verify its signature, issuer or expiry: it is for development and tests only.
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

    /// Reads the claims of a JWT without verifying it.
    /// - Throws: `AuthenticationError` when the text is not a JWT with a JSON-object payload.
    public init(jwt: String) throws(AuthenticationError) {
        let parts = jwt.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty else {
            throw AuthenticationError("Could not parse as id token: expected three dot-separated base64url parts")
        }
        var b64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let payload = Data(base64Encoded: b64),
            let value = try? ConvexValue(plainJSON: payload), case .object(let claims) = value
        else {
            throw AuthenticationError("Could not parse as id token: the payload is not a base64url JSON object")
        }
        self.init(claims: claims)
    }

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
        self.init(tokenIdentifier: text("tokenIdentifier") ?? "\(issuer)|\(subject)", subject: subject, issuer: issuer, claims: claims)
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

/// A credential the deployment rejected.
public struct AuthenticationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
