import Testing

@testable import ConvexGateway

/// Which client a request comes from: the signed-in user, else the address, and behind a trusted proxy the address it
/// forwards, never one a client wrote.
@Suite struct ClientIdentificationTests {
    static func request(from peer: String, forwardedFor: String? = nil) -> GatewayRequest {
        GatewayRequest(
            method: "GET", rawPath: "/query/a:b",
            headers: forwardedFor.map { ["X-Forwarded-For": $0] } ?? [:], remoteAddress: peer)
    }

    @Test func withoutTrustedProxiesTheClientIsItsPeer() {
        let clients = ClientIdentification(trustedProxies: [])
        let request = Self.request(from: "192.0.2.1", forwardedFor: "203.0.113.9")
        #expect(clients.client(of: request, identity: .anonymous) == .address("192.0.2.1"))
    }

    @Test func behindATrustedProxyTheClientIsTheLastAddressItDidNotAdd() {
        let clients = ClientIdentification(trustedProxies: ["10.0.0.0/8", "127.0.0.1"])
        // The proxy appended the client's address; what the client wrote before it is not believed.
        #expect(
            clients.client(
                of: Self.request(from: "10.1.2.3", forwardedFor: "198.51.100.7, 203.0.113.9"), identity: .anonymous)
                == .address("203.0.113.9"))
        // Two trusted proxies in a row.
        #expect(
            clients.client(
                of: Self.request(from: "127.0.0.1", forwardedFor: "203.0.113.9, 10.9.9.9"), identity: .anonymous)
                == .address("203.0.113.9"))
        // A peer that is not a trusted proxy: its header is not read.
        #expect(
            clients.client(of: Self.request(from: "192.0.2.1", forwardedFor: "203.0.113.9"), identity: .anonymous)
                == .address("192.0.2.1"))
        // No header, or one that is not an address: the proxy's own.
        #expect(clients.client(of: Self.request(from: "10.1.2.3"), identity: .anonymous) == .address("10.1.2.3"))
        #expect(
            clients.client(of: Self.request(from: "10.1.2.3", forwardedFor: "not-an-address"), identity: .anonymous)
                == .address("10.1.2.3"))
        // IPv6 clients by their /64.
        func forwarded(_ address: String) -> ClientKey {
            clients.client(of: Self.request(from: "10.1.2.3", forwardedFor: address), identity: .anonymous)
        }
        #expect(forwarded("2001:db8:1:2::5") == forwarded("2001:db8:1:2::9"))
        #expect(forwarded("2001:db8:1:2::5") != forwarded("2001:db8:1:3::5"))
    }

    @Test func aSignedInCallerIsItsUserWhateverTheTokenOrAddress() {
        let clients = ClientIdentification(trustedProxies: [])
        let first = FairnessEndToEndTests.token(subject: "ann", issued: 1)
        let second = FairnessEndToEndTests.token(subject: "ann", issued: 2)
        let a = clients.client(of: Self.request(from: "192.0.2.1"), identity: .bearer(first))
        let b = clients.client(of: Self.request(from: "192.0.2.2"), identity: .bearer(second))
        #expect(a == b)
        #expect(a == .user(issuer: "https://issuer.test", subject: "ann"))
        #expect(!a.description.contains(first), "a token in a client's key")
        // A token without `iss` and `sub` is its address.
        #expect(
            clients.client(of: Self.request(from: "192.0.2.1"), identity: .bearer("a.b.c")) == .address("192.0.2.1"))
    }

    @Test func settingsRefuseWhatIsNotAnAddressOrNetwork() {
        #expect(ClientIdentification.invalidProxy("10.0.0.0/8") == nil)
        #expect(ClientIdentification.invalidProxy("fd00::/8") == nil)
        #expect(ClientIdentification.invalidProxy("192.0.2.1") == nil)
        #expect(ClientIdentification.invalidProxy("proxy.internal") != nil)
        #expect(ClientIdentification.invalidProxy("10.0.0.0/33") != nil)
    }
}
