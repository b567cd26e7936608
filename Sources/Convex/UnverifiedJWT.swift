import ConvexValues
import Foundation

/// The claims of a JWT read without checking its signature: what a holder that only passes the token on may learn
/// from it (its `exp`, to plan a refresh or to bound a stream ticket). The deployment is what verifies a token.
package enum UnverifiedJWT {
    /// The payload's claims, or `nil` when `jwt` is not three dot-separated parts whose second is a base64url JSON
    /// object.
    package static func claims(_ jwt: some StringProtocol) -> [String: ConvexValue]? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            case .object(let claims)? = try? ConvexValue(plainJSON: payload)
        else { return nil }
        return claims
    }
}

/// base64url (RFC 4648 §5), the URL-safe alphabet JWTs and stream tickets are written in.
package enum Base64URL {
    /// `bytes` in base64url without padding.
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// Decodes padded or unpadded base64url; `nil` for any other character, including the `+` and `/` of plain
    /// base64.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard !text.contains("+"), !text.contains("/") else { return nil }
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !b64.contains("=") || b64.count % 4 == 0 else { return nil }
        while b64.count % 4 != 0 { b64 += "=" }
        return Data(base64Encoded: b64).map { Array($0) }
    }
}
