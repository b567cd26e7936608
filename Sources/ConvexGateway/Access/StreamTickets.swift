import Convex
import Crypto
import Foundation

/// Stream tickets: URL-safe capabilities that let an `EventSource`, which cannot send headers, open a stream as the
/// user whose JWT minted the ticket (`POST /stream-tickets`, then `GET /subscribe/…?ticket=…`).
///
/// A ticket is the token itself and its expiry, sealed with AES-GCM under ``StreamTicketKey``: it reveals nothing
/// of the token, any change to it is detected, and any replica holding the same key opens it, so the gateway keeps
/// no table of tickets. It is valid until the token's own `exp` (read, not verified: the deployment verifies the
/// token when the stream opens), and at most ``maxLifetime``, which also bounds tokens without `exp`.
///
/// Layout before base64url (no padding): version (1 byte) | nonce (12) | ciphertext | tag (16); the plaintext is
/// the expiry (Unix milliseconds, 8 bytes big-endian) followed by the token; the version byte is authenticated too.
/// Pure: time is passed in.
struct StreamTickets: Sendable {
    static let version: UInt8 = 1

    let key: StreamTicketKey
    let maxLifetime: Duration

    /// A ticket and when it stops opening, in Unix milliseconds.
    struct Issued: Sendable, Equatable {
        var ticket: String
        var expiresAt: Int64
    }

    /// Seals `token` into a ticket at `now` (Unix milliseconds).
    /// - Throws: 401 `Unauthenticated` when the token is not a JWT whose payload can be read, or has expired.
    func issue(for token: String, now: Int64) throws(GatewayError) -> Issued {
        guard let claims = UnverifiedJWT.claims(token) else {
            throw GatewayError.unauthenticated(
                "A stream ticket is made from a JWT: the token is not three base64url parts with a JSON payload")
        }
        var expiresAt = now + maxLifetime.milliseconds
        if let exp = claims["exp"] {
            guard case .float64(let seconds) = exp, seconds.isFinite else {
                throw GatewayError.unauthenticated("The token's 'exp' claim is not a number")
            }
            let tokenExpiry = seconds * 1000
            guard tokenExpiry > Double(now) else { throw GatewayError.unauthenticated("The token has expired") }
            if tokenExpiry < Double(expiresAt) { expiresAt = Int64(tokenExpiry) }
        }
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(8 + token.utf8.count)
        plaintext.append(contentsOf: (0..<8).reversed().map { UInt8(truncatingIfNeeded: expiresAt >> ($0 * 8)) })
        plaintext.append(contentsOf: token.utf8)
        do {
            let sealed = try AES.GCM.seal(plaintext, using: key.key, authenticating: [Self.version])
            guard let combined = sealed.combined else { throw GatewayError.internalError }
            return Issued(ticket: Base64URL.encode([Self.version] + Array(combined)), expiresAt: expiresAt)
        } catch {
            throw GatewayError.internalError
        }
    }

    /// The token a ticket carries, if it opens under this key and has not expired at `now` (Unix milliseconds).
    /// - Throws: 401 `Unauthenticated` saying whether the ticket is malformed, of an unknown version, sealed under
    ///   another key or changed, or expired.
    func open(_ ticket: String, now: Int64) throws(GatewayError) -> String {
        // Canonical text only: one ticket has one spelling, so no variant of it opens.
        guard let bytes = Base64URL.decode(ticket), Base64URL.encode(bytes) == ticket,
            bytes.count > 1 + 12 + 16 + 8
        else {
            throw GatewayError.unauthenticated("Malformed stream ticket; get one from POST /stream-tickets")
        }
        guard bytes[0] == Self.version else {
            throw GatewayError.unauthenticated(
                "Stream ticket of an unknown version (\(bytes[0])); get a new one from POST /stream-tickets")
        }
        let plaintext: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(combined: bytes.dropFirst())
            plaintext = Array(try AES.GCM.open(box, using: key.key, authenticating: [Self.version]))
        } catch {
            throw GatewayError.unauthenticated(
                "Stream ticket not valid: it was changed, or sealed by a gateway with another ticket key")
        }
        let expiresAt = plaintext.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard now < expiresAt else {
            throw GatewayError.unauthenticated("Stream ticket expired; get a new one from POST /stream-tickets")
        }
        guard let token = String(validating: plaintext.dropFirst(8), as: UTF8.self) else {
            throw GatewayError.unauthenticated("Malformed stream ticket; get one from POST /stream-tickets")
        }
        return token
    }
}
