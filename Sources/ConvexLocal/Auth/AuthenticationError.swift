/// A credential the deployment rejected, with Convex's short code and message.
///
/// The HTTP API answers it with `{"code", "message"}` and status 401 (400 for ``isBadRequest`` errors, such as a
/// failed OIDC discovery); the sync protocol sends `message` in an `AuthError`.
public struct AuthenticationError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case unauthenticated
        case badRequest
    }

    /// Convex's short code, e.g. `InvalidAuthHeader`, `NoAuthProvider`, `TokenExpired`.
    public let code: String
    /// Convex's developer-facing message.
    public let message: String
    private let kind: Kind

    private init(_ kind: Kind, code: String, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    /// Whether the HTTP API answers it with 400 rather than 401.
    public var isBadRequest: Bool { kind == .badRequest }

    public var description: String { "\(code): \(message)" }

    /// The token is malformed, badly signed, expired or lacks a claim (Convex `InvalidAuthHeader`).
    public static func invalidAuthHeader(_ message: String) -> AuthenticationError {
        AuthenticationError(.unauthenticated, code: "InvalidAuthHeader", message)
    }

    /// No configured provider matches the token's issuer and audience.
    public static func noAuthProvider(_ message: String) -> AuthenticationError {
        AuthenticationError(.unauthenticated, code: "NoAuthProvider", message)
    }

    /// An OIDC token failed verification.
    public static func unauthenticated(_ message: String) -> AuthenticationError {
        AuthenticationError(.unauthenticated, code: "Unauthenticated", message)
    }

    /// The OIDC provider's discovery document could not be used.
    public static func discoveryFailed(_ message: String) -> AuthenticationError {
        AuthenticationError(.badRequest, code: "AuthProviderDiscoveryFailed", message)
    }

    /// The identity of a live sync session expired (`exp` passed, no leeway).
    public static let tokenExpired = AuthenticationError(
        .unauthenticated, code: "TokenExpired", "Convex token identity expired")

    /// A wrong admin key.
    public static let badAdminKey = AuthenticationError(
        .unauthenticated, code: "BadAdminKey", "The provided admin key was invalid for this instance")

    /// An `Authorization` header that is neither `Bearer` nor `Convex`.
    public static let invalidHeader = AuthenticationError(
        .badRequest, code: "InvalidHeaderFailure",
        "Authorization header must be `Bearer <token>` or `Convex <admin key>`")
}
