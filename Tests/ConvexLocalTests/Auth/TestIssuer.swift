import CryptoExtras
import Foundation
import Hummingbird
import JWTKit
import Logging
import NIOCore
import Synchronization

/// A token issuer made at test time (no key is committed): an RSA key and an EC key published in a JWKS, and an EC
/// key that is not published.
struct TestIssuer: Sendable {
    static let issuer = "https://issuer.test"
    static let rsaKID = "rsa-1"
    static let ecKID = "ec-1"
    static let unpublishedKID = "ec-unpublished"

    /// Generating an RSA key takes a while in debug builds: one issuer for all tests.
    static let shared = TestIssuer()

    let rsa: JWTKit.Insecure.RSA.PrivateKey
    let ec: ES256PrivateKey
    let unpublished: ES256PrivateKey

    private init() {
        rsa = try! JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        ec = ES256PrivateKey()
        unpublished = ES256PrivateKey()
    }

    /// The public keys, as a JSON Web Key Set.
    var jwksJSON: String {
        let (n, e) = try! rsa.publicKey.getKeyPrimitives()
        let point = ec.parameters!
        return """
            {"keys":[{"kty":"RSA","kid":"\(Self.rsaKID)","use":"sig","alg":"RS256","n":"\(base64URL(n))","e":"\(base64URL(e))"},\
            {"kty":"EC","kid":"\(Self.ecKID)","use":"sig","alg":"ES256","crv":"P-256","x":"\(point.x)","y":"\(point.y)"}]}
            """
    }

    var jwksDataURI: String { "data:application/json;base64," + Data(jwksJSON.utf8).base64EncodedString() }

    enum Key: Sendable {
        case rsa
        case ec
        case unpublished
        /// The EC key, with no `kid` in the header.
        case ecWithoutKID
    }

    /// Signs `claims`; `kid` overrides the key's own key ID in the header.
    func sign(_ claims: TestClaims, with key: Key = .rsa, kid: String? = nil) async throws -> String {
        let keys = JWTKeyCollection()
        let keyID: String?
        switch key {
        case .rsa:
            keyID = kid ?? Self.rsaKID
            await keys.add(rsa: rsa, digestAlgorithm: .sha256)
        case .ec:
            keyID = kid ?? Self.ecKID
            await keys.add(ecdsa: ec)
        case .unpublished:
            keyID = kid ?? Self.unpublishedKID
            await keys.add(ecdsa: unpublished)
        case .ecWithoutKID:
            keyID = nil
            await keys.add(ecdsa: ec)
        }
        // The key is the collection's default; the header names `keyID`.
        var header = JWTHeader()
        header.kid = keyID
        return try await keys.sign(claims, header: header)
    }

    /// Claims for `subject`, issued now and valid for `lifetime` seconds.
    static func claims(
        subject: String = "user-1", issuer: String = TestIssuer.issuer, lifetime: Double = 3600,
        // Real time: the default reads the wall clock for claims valid for an hour; no window.
        now: Double = Date().timeIntervalSince1970
    ) -> TestClaims {
        TestClaims(iss: issuer, sub: subject, exp: Int(now + lifetime), iat: Int(now), name: "Ann")
    }
}

/// The claims tests put in tokens (absent ones are left out of the JSON).
struct TestClaims: JWTPayload {
    var iss: String?
    var sub: String?
    var aud: [String]?
    var exp: Int?
    var nbf: Int?
    var iat: Int?
    var name: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

func base64URL(_ data: some DataProtocol) -> String {
    Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// Replaces a token's payload, keeping its header and signature.
func tampered(_ token: String, _ claims: TestClaims) throws -> String {
    let parts = token.split(separator: ".")
    return "\(parts[0]).\(base64URL(try JSONEncoder().encode(claims))).\(parts[2])"
}

/// An unsigned token (`alg: none`-style signature) with these claims, for the development mode.
func unsignedToken(_ claims: TestClaims) throws -> String {
    "\(base64URL(Data(#"{"alg":"RS256","typ":"JWT"}"#.utf8))).\(base64URL(try JSONEncoder().encode(claims))).c2ln"
}

/// Serves `routes` (path → content type and body, where `{BASE}` stands for the server's URL) over HTTP on a free
/// loopback port while `body` runs.
func withHTTPServer<R: Sendable>(
    _ routes: [String: (contentType: String, body: String)],
    _ body: (_ baseURL: String) async throws -> R
) async throws -> R {
    let router = Router()
    let baseURL = SharedText()
    for (path, route) in routes {
        router.get(RouterPath(path)) { _, _ in
            let text = route.body.replacingOccurrences(of: "{BASE}", with: baseURL.value.withLock { $0 })
            return Response(
                status: .ok, headers: [.contentType: route.contentType],
                body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    var logger = Logger(label: "jwks-test-server")
    logger.logLevel = .critical
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in
            continuation.yield(channel.localAddress?.port ?? 0)
            continuation.finish()
        }, logger: logger)
    let server = Task { try await app.run() }
    defer { server.cancel() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else { throw CancellationError() }
    baseURL.value.withLock { $0 = "http://127.0.0.1:\(port)" }
    return try await body("http://127.0.0.1:\(port)")
}

final class SharedText: Sendable {
    let value = Mutex("")
}
