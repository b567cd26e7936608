import Convex
import Foundation
import HTTPFields

/// Tells which client a request comes from, for the shares of the gateway's bounds (``ClientKey``): a signed-in
/// caller by the `iss` and `sub` of its token, read without verifying it (the deployment judges the token; a forged
/// one is refused, and whatever it held ends with it), anyone else (or a token without both claims) by its address.
///
/// The address is the TCP peer's, unless the peer is one of the trusted proxies (`--trusted-proxies`): then it is the
/// address the proxy put last in `X-Forwarded-For` that is not itself a trusted proxy. A proxy appends the address it
/// saw, so only the addresses trusted proxies appended can be believed; a client may write anything before them.
/// Without trusted proxies, `X-Forwarded-For` is never read.
package struct ClientIdentification: Sendable {
    /// The trusted proxies' networks.
    let proxies: [AddressNetwork]

    /// Believes the `X-Forwarded-For` of the peers in `trustedProxies` (addresses or networks; the settings refuse
    /// anything else, ``invalidProxy(_:)``).
    package init(trustedProxies: [String]) {
        proxies = trustedProxies.compactMap(AddressNetwork.init)
    }

    /// Why `text` cannot name a trusted proxy; `nil` when it can.
    package static func invalidProxy(_ text: String) -> String? {
        AddressNetwork(text) == nil
            ? "'\(printable(text))' is not an IPv4 or IPv6 address or network (192.0.2.1, 10.0.0.0/8, fd00::/8)" : nil
    }

    /// The client of a request that acts as `identity`.
    func client(of request: GatewayRequest, identity: UpstreamIdentity) -> ClientKey {
        if case .bearer(let token) = identity, let claims = UnverifiedJWT.claims(token),
            case .string(let issuer)? = claims["iss"], case .string(let subject)? = claims["sub"]
        {
            return .user(issuer: issuer, subject: subject)
        }
        return addressKey(of: request)
    }

    /// The client's address as a key, signed in or not: the share of signed-in connections is per address.
    func addressKey(of request: GatewayRequest) -> ClientKey {
        .address(ClientAddress.rateLimitKey(address(of: request)))
    }

    /// The client's address: the peer's, or behind trusted proxies the one they forward.
    func address(of request: GatewayRequest) -> String? {
        guard let peer = request.remoteAddress, isTrusted(peer) else { return request.remoteAddress }
        guard let forwarded = request.header(HeaderName.xForwardedFor) else { return peer }
        let hops = forwarded.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() where !isTrusted(hop) {
            return AddressNetwork.isAddress(hop) ? hop : peer
        }
        return hops.first ?? peer
    }

    private func isTrusted(_ address: String) -> Bool {
        proxies.contains { $0.contains(address) }
    }
}

/// A setting's value that is not what it must be; its message names the value.
package struct SettingValueError: Error, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
