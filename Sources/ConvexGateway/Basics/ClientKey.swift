/// Whom a share of the gateway's bounds belongs to (docs/configuration.md, "Limits and fairness"): a signed-in
/// caller by its user (the token's issuer and subject, so that one user's several tokens share one share), anyone
/// else by client address (an IPv6 client by its /64 network; behind a trusted proxy, the address it forwards).
/// Access/ClientIdentification.swift tells them apart; tokens are never part of a key, so keys may be logged.
package struct ClientKey: Hashable, Sendable, CustomStringConvertible {
    private let key: String

    /// A signed-in user: the `iss` and `sub` claims of its token.
    package static func user(issuer: String, subject: String) -> ClientKey {
        ClientKey(key: "user \(issuer.count):\(issuer) \(subject)")
    }

    /// A caller known by its address only, as `ClientAddress.rateLimitKey` writes it.
    package static func address(_ key: String) -> ClientKey {
        ClientKey(key: "address " + key)
    }

    package var description: String { key }
}
