import ConvexValues
import Foundation

/// The header and claims of a JWT read without checking its signature, and Convex's time checks on them.
///
/// Convex (`crates/authentication/src/lib.rs`) validates `exp`, `nbf` and `iat` with a leeway of 5 s
/// (`TemporalOptions { epsilon: 5 s }`): a token is refused once `now - exp > 5`, or while `nbf - now > 5` or
/// `iat - now > 5`. A live sync session's identity, by contrast, expires at `exp` exactly
/// (`crates/keybroker/src/broker.rs`, `is_expired`).
struct TokenClaims: Sendable, Hashable {
    /// Convex's leeway for `exp`, `nbf` and `iat` when a token is presented.
    static let leeway: Double = 5

    static let unparsable = AuthenticationError.invalidAuthHeader(
        "Could not parse JWT payload. Check that the token is a valid JWT format with three base64-encoded parts separated by dots."
    )

    var header: [String: ConvexValue]
    var claims: [String: ConvexValue]

    /// - Throws: Convex's `InvalidAuthHeader` parse error when the text is not three base64url parts whose first two
    ///   are JSON objects, or when `exp`, `nbf` or `iat` is present but not a number.
    init(jwt: String) throws(AuthenticationError) {
        let parts = jwt.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Self.object(parts[0]), let claims = Self.object(parts[1]) else {
            throw Self.unparsable
        }
        for key in ["exp", "nbf", "iat"] {
            if let value = claims[key], value.numberValue == nil { throw Self.unparsable }
        }
        self.header = header
        self.claims = claims
    }

    private static func object(_ part: Substring) -> [String: ConvexValue]? {
        guard !part.isEmpty, let bytes = base64URLDecode(part),
            case .object(let fields)? = try? ConvexValue(plainJSON: bytes)
        else { return nil }
        return fields
    }

    var issuer: String? { claims["iss"]?.stringValue }
    var subject: String? { claims["sub"]?.stringValue }
    var expiration: Double? { claims["exp"]?.numberValue }
    var notBefore: Double? { claims["nbf"]?.numberValue }
    var issuedAt: Double? { claims["iat"]?.numberValue }
    var keyID: String? { header["kid"]?.stringValue }
    var algorithm: String? { header["alg"]?.stringValue }

    /// `aud` as a list (a single string or an array of strings).
    var audiences: [String] {
        switch claims["aud"] {
        case .string(let s)?: [s]
        case .array(let items)?: items.compactMap(\.stringValue)
        default: []
        }
    }

    /// Convex's `exp`/`nbf`/`iat` checks at `now` (seconds since 1970), with ``leeway``.
    /// - Throws: `InvalidAuthHeader` "Could not validate token: Token expired N seconds ago" or
    ///   "... Token will be valid in N seconds".
    func checkTimes(now: Double) throws(AuthenticationError) {
        // Convex compares whole seconds (the current time truncated, chrono durations printed in whole seconds).
        let now = now.rounded(.down)
        if let exp = expiration, now - exp > Self.leeway {
            throw .invalidAuthHeader("Could not validate token: Token expired \(Self.seconds(now - exp)) seconds ago")
        }
        for start in [notBefore, issuedAt].compactMap({ $0 }) where start - now > Self.leeway {
            throw .invalidAuthHeader(
                "Could not validate token: Token will be valid in \(Self.seconds(start - now)) seconds")
        }
    }

    private static func seconds(_ value: Double) -> Int64 {
        Int64(exactly: value.rounded(.towardZero)) ?? (value > 0 ? .max : .min)
    }
}

/// Decodes unpadded or padded base64url; `nil` for other characters.
func base64URLDecode(_ text: Substring) -> [UInt8]? {
    var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    guard !b64.contains("=") || b64.count % 4 == 0 else { return nil }
    while b64.count % 4 != 0 { b64 += "=" }
    return Data(base64Encoded: b64).map { Array($0) }
}

extension ConvexValue {
    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// A JSON number (float64, or int64 from `$integer`).
    var numberValue: Double? {
        switch self {
        case .float64(let d): d.isFinite ? d : nil
        case .int64(let i): Double(i)
        default: nil
        }
    }
}
