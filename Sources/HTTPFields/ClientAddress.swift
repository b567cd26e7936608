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
