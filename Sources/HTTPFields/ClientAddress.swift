import Glibc

/// A client's address as the rate limit keys it.
public enum ClientAddress {
    /// The key of a client address: the address itself for IPv4, the /64 network for IPv6 (an IPv4-mapped IPv6
    /// address counts as its IPv4 address); `unknown` without one.
    public static func rateLimitKey(_ address: String?) -> String {
        guard let address, !address.isEmpty else { return "unknown" }
        guard address.contains(":") else { return address }
        var raw = in6_addr()
        guard inet_pton(AF_INET6, address, &raw) == 1 else { return address }
        let bytes = withUnsafeBytes(of: raw) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        return bytes[0..<8].map { String($0, radix: 16) }.joined(separator: ".") + "/64"
    }
}

/// An IPv4 or IPv6 network, an address and a prefix length (`10.0.0.0/8`, `fd00::/8`, or one address alone), such as
/// the trusted proxies whose `X-Forwarded-For` the gateway believes.
public struct AddressNetwork: Sendable {
    let bytes: [UInt8]
    let prefix: Int

    /// The network `text` names; `nil` when it is neither an address nor `address/prefix`.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let bytes = Self.bytes(of: first) else { return nil }
        let prefix = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
        guard let prefix, (0...(bytes.count * 8)).contains(prefix) else { return nil }
        self.bytes = bytes
        self.prefix = prefix
    }

    /// Whether the numeric address `address` (an IPv6 one in brackets too) is in the network.
    public func contains(_ address: String) -> Bool {
        guard let address = Self.bytes(of: address), address.count == bytes.count else { return false }
        var bits = prefix
        for (a, b) in zip(address, bytes) where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if a & mask != b & mask { return false }
            bits -= 8
        }
        return true
    }

    /// Whether `text` is a numeric IPv4 or IPv6 address.
    public static func isAddress(_ text: String) -> Bool { bytes(of: text) != nil }

    /// The bytes of a numeric IPv4 or IPv6 address (an IPv6 one in brackets too).
    static func bytes(of address: String) -> [UInt8]? {
        var text = address
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}
