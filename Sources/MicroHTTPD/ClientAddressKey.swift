#if canImport(Glibc)
    import Glibc
#endif

/// The client a connection's share of the server is counted for (``HTTPServerConfiguration/maxConnectionsPerAddress``,
/// ``HTTPServerConfiguration/maxBodyBytesPerAddress``): an IPv4 address, or the /64 network of an IPv6 address (one
/// host is commonly given a whole /64). An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, from a dual-stack socket) counts
/// as its IPv4 address. The same keys as `ClientAddress.rateLimitKey` in HTTPFields, which this module cannot import.
struct ClientAddressKey: Hashable, Sendable, CustomStringConvertible {
    /// The IPv4 address, or the first 64 bits of the IPv6 address, in host order.
    let bits: UInt64
    let isIPv6: Bool

    init(bits: UInt64, isIPv6: Bool) {
        self.bits = bits
        self.isIPv6 = isIPv6
    }

    /// The key of a socket address; `nil` for one that is neither IPv4 nor IPv6.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            self.init(ipv4: ipv4)
        case AF_INET6:
            let ipv6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            self.init(ipv6: ipv6)
        default:
            return nil
        }
    }

    /// The key of a numeric IPv4 or IPv6 address; `nil` for anything else.
    init?(numeric text: String) {
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        if inet_pton(AF_INET, text, &ipv4) == 1 {
            self.init(ipv4: ipv4)
        } else if inet_pton(AF_INET6, text, &ipv6) == 1 {
            self.init(ipv6: ipv6)
        } else {
            return nil
        }
    }

    private init(ipv4: in_addr) {
        self.init(bits: UInt64(UInt32(bigEndian: ipv4.s_addr)), isIPv6: false)
    }

    private init(ipv6: in6_addr) {
        let bytes = withUnsafeBytes(of: ipv6) { Array($0) }
        let fold = { (range: Range<Int>) in bytes[range].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            self.init(bits: fold(12..<16), isIPv6: false)
        } else {
            self.init(bits: fold(0..<8), isIPv6: true)
        }
    }

    /// `192.0.2.1`, or `2001:db8:0:1::/64`.
    var description: String {
        if !isIPv6 {
            return (0..<4).map { String(bits >> (24 - 8 * $0) & 0xFF) }.joined(separator: ".")
        }
        return (0..<4).map { String(bits >> (48 - 16 * $0) & 0xFFFF, radix: 16) }.joined(separator: ":") + "::/64"
    }
}
