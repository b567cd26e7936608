/// Who a new upstream subscription is charged to, for the limit per caller (`--max-subscriptions-per-caller`): the
/// request's ``ClientKey`` (a signed-in user by its token's issuer and subject, so one user's tokens share one share;
/// anyone else by client address, an IPv6 client by its /64 network). A subscription stays charged to the caller that
/// made it for as long as it lives (its readers, then its keep-warm period), whoever else reads it meanwhile.
package struct SubscriptionCaller: Hashable, Sendable, CustomStringConvertible {
    private let client: ClientKey

    package init(client: ClientKey) {
        self.client = client
    }

    /// The caller of hub users that have none (tests, and anonymous requests without a client address).
    package static let unknown = SubscriptionCaller(client: .address("unknown"))

    package var description: String { client.description }
}

/// Which limit refused a subscription the hub would have had to make.
package enum SubscriptionLimit: Sendable, Hashable {
    /// `--max-subscriptions`: the table of live subscriptions is full.
    case gateway
    /// `--max-subscriptions-per-caller`: the caller made as many of the live subscriptions as one caller may.
    case caller
}
