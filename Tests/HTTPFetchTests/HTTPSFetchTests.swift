import HTTPFetch
import NIOSSL
import Synchronization
import Testing

/// https through NIOSSL: a loopback server with a self-signed certificate for 127.0.0.1 and localhost (valid until
/// 2126), refused under the default verification and accepted when it is the trust root.
@Suite(.timeLimit(.minutes(5)))
struct HTTPSFetchTests {
    static let certificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIIBmjCCAUGgAwIBAgIUIQ1og2bjBkBALFaJTp6VupAPUG8wCgYIKoZIzj0EAwIw
        FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNDE0MDAwNFoYDzIxMjYxMDMx
        MTQwMDA0WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
        PQMBBwNCAARAjyu5ehzvCqUWox0jMOr683Iu9ti2yG51GiMYCfkp2ro770ZINJQ6
        n4+1P2kRCd2Y20HIvtS3SyfgWAl5pTNxo28wbTAdBgNVHQ4EFgQU4UZRQZIZz1F8
        OV7nsKMq+GiUWj0wHwYDVR0jBBgwFoAU4UZRQZIZz1F8OV7nsKMq+GiUWj0wDwYD
        VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARhwR/AAABgglsb2NhbGhvc3QwCgYIKoZI
        zj0EAwIDRwAwRAIgZO9N9axU9AwfPhPoXjU/nPAxyyn+cFw5A3xv69xMcNwCIGjW
        ivRzYW5dOohG1Ls1H+4JKydyzLRa9Nh3sLm34rxO
        -----END CERTIFICATE-----
        """

    static let privateKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJl2L8kxRMJfYiPn1
        u5PbHbkXE7M0ShneFqWz/qc3OgGhRANCAARAjyu5ehzvCqUWox0jMOr683Iu9ti2
        yG51GiMYCfkp2ro770ZINJQ6n4+1P2kRCd2Y20HIvtS3SyfgWAl5pTNx
        -----END PRIVATE KEY-----
        """

    static func serverContext() throws -> NIOSSLContext {
        try NIOSSLContext(
            configuration: .makeServerConfiguration(
                certificateChain: [.certificate(NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem))],
                privateKey: .privateKey(NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem))))
    }

    @Test func aTrustedCertificateIsAccepted() async throws {
        var client = TLSConfiguration.makeClientConfiguration()
        client.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(Self.certificatePEM.utf8), format: .pem)])
        let trusted = client
        try await withLoopbackServer(tls: try Self.serverContext(), { _ in (.ok, [], Array("over TLS".utf8)) }) {
            port in
            let response = try await fetch(.GET, "https://127.0.0.1:\(port)/keys", tls: trusted)
            #expect(response.status == 200)
            #expect(response.body == Array("over TLS".utf8))
        }
    }

    @Test func anUntrustedCertificateIsRefusedByDefault() async throws {
        let served = RequestCount()
        try await withLoopbackServer(
            tls: try Self.serverContext(),
            { _ in
                served.count.withLock { $0 += 1 }
                return (.ok, [], [])
            }
        ) { port in
            await #expect(throws: HTTPFetchError.self) {
                try await fetch(.GET, "https://127.0.0.1:\(port)/keys")
            }
        }
        // Refused in the handshake: which side's error surfaces first varies (the certificate failure, or the channel
        // the server closed), but no request ever reaches the server.
        #expect(served.count.withLock { $0 } == 0)
    }

    @Test func plainHTTPToATLSServerFails() async throws {
        try await withLoopbackServer(tls: try Self.serverContext(), { _ in (.ok, [], []) }) { port in
            await #expect(throws: HTTPFetchError.self) {
                try await fetch(.GET, "http://127.0.0.1:\(port)/keys", timeout: .seconds(5))
            }
        }
    }
}

/// How many requests a loopback server answered.
private final class RequestCount: Sendable {
    let count = Mutex(0)
}
