import HTTPFields

/// How the answers of a route that acts for its caller may be cached. They depend on the request fields that name
/// the caller (`Vary: Authorization`, and `Cookie` when the gateway reads an auth cookie), and a signed-in caller's
/// answers are that caller's alone (`Cache-Control: private`), so that no shared cache (a CDN, a proxy) hands one
/// caller's answer to another. Stream tickets name the caller in the URL, which a cache keys by anyway. Event streams
/// carry `Cache-Control: no-store` instead.
struct CallerCaching: Sendable {
    /// The headers of an anonymous caller's answers: the answer would differ with a caller named.
    let anonymous: [(String, String)]
    /// The headers of a signed-in caller's answers.
    let signedIn: [(String, String)]

    /// - Parameter authCookie: the cookie the gateway reads the caller's token from (`--auth-cookie`), if any.
    init(authCookie: String?) {
        let vary = (HeaderName.vary, authCookie == nil ? HeaderName.authorization : "Authorization, Cookie")
        anonymous = [vary]
        signedIn = [(HeaderName.cacheControl, "private"), vary]
    }

    /// The headers of answers to `identity`.
    func headers(for identity: UpstreamIdentity) -> [(String, String)] {
        if case .anonymous = identity { anonymous } else { signedIn }
    }
}
