import HTTPFields

/// Who a new upstream subscription is charged to, for the limit per caller (`--max-subscriptions-per-caller`): a
/// signed-in caller by its identity, an anonymous one by its client address as the rate limit keys it (an IPv6
/// client by its /64 network). A subscription stays charged to the caller that made it for as long as it lives
/// (its readers, then its keep-warm period), whoever else reads it meanwhile.
package struct SubscriptionCaller: Hashable, Sendable, CustomStringConvertible {
    private let key: String

    /// The caller of a request that acts as `identity` (the upstream pool's opaque id, "" for anonymous callers),
    /// from the client address `remoteAddress`.
    package init(identity: String, remoteAddress: String?) {
        key = identity.isEmpty ? "address " + ClientAddress.rateLimitKey(remoteAddress) : "identity " + identity
    }

    /// The caller of hub users that have none (tests, and anonymous requests without a client address).
    package static let unknown = SubscriptionCaller(identity: "", remoteAddress: nil)

    package var description: String { key }
}

/// Which limit refused a subscription the hub would have had to make.
package enum SubscriptionLimit: Sendable, Hashable {
    /// `--max-subscriptions`: the table of live subscriptions is full.
    case gateway
    /// `--max-subscriptions-per-caller`: the caller made as many of the live subscriptions as one caller may.
    case caller
}
