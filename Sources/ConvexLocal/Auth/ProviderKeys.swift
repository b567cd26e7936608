import ConvexValues
import Foundation
import HTTPFetch
import JWTKit
import Synchronization

/// The verification keys of one provider: parsed once from a `data:` URI or `file:` path, or fetched over HTTP (for
/// OIDC through discovery) when a token needs them and kept for ``AuthProvider/keyCacheLifetime``.
final class ProviderKeys: Sendable {
    /// A parsed key set: jwt-kit's collection and the key IDs it holds.
    struct KeySet: Sendable {
        let collection: JWTKeyCollection
        let keyIDs: Set<String>
    }

    private enum Source: Sendable {
        case fixed(KeySet)
        case url(String)
        case discovery(domain: String)
    }

    private struct Cached: Sendable {
        var keys: KeySet
        var fetched: ContinuousClock.Instant
    }

    /// A token with an unknown `kid` refetches remote keys at most this often.
    static let unknownKeyRefetchInterval: Duration = .seconds(10)

    private let source: Source
    private let cache = Mutex<Cached?>(nil)
    private let fetchTimeout: Duration

    /// Reads `data:` and `file:` key sets now; remote ones wait for the first token.
    /// - Throws: ``AuthConfigError`` when a local key set cannot be read or parsed.
    init(_ provider: AuthProvider, fetchTimeout: Duration) async throws(AuthConfigError) {
        self.fetchTimeout = fetchTimeout
        switch provider {
        case .oidc(let domain, _):
            source = .discovery(domain: AuthProvider.withScheme(domain))
        case .customJWT(_, let jwks, _, _):
            if jwks.hasPrefix("http://") || jwks.hasPrefix("https://") {
                source = .url(jwks)
                return
            }
            let body: [UInt8]
            if jwks.hasPrefix("data:") {
                guard let decoded = Self.decodeDataURI(jwks) else {
                    throw AuthConfigError(
                        "Invalid JWKS data URL. Check that the data URL is properly formatted and contains valid base64-encoded JSON."
                    )
                }
                body = decoded
            } else {
                let path = Self.filePath(jwks)
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw AuthConfigError("Cannot read the JWKS file \(path)")
                }
                body = Array(data)
            }
            guard let keys = await Self.parse(body) else {
                throw AuthConfigError(
                    "Invalid JWKS in \(jwks.hasPrefix("data:") ? "the data: URI" : Self.filePath(jwks)): not a JSON Web Key Set of RSA or EC keys, each with a \"kid\""
                )
            }
            source = .fixed(keys)
        }
    }

    /// The keys to check a token with.
    /// - Parameter keyID: the token's `kid`; an unknown one refetches remote keys (rotation).
    /// - Throws: Convex's `InvalidAuthHeader` (JWKS fetch) or `AuthProviderDiscoveryFailed` (OIDC) errors.
    func keys(keyID: String?) async throws(AuthenticationError) -> KeySet {
        if case .fixed(let keys) = source { return keys }
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0 }) {
            let fresh = now - cached.fetched < AuthProvider.keyCacheLifetime
            let known = keyID.map { cached.keys.keyIDs.contains($0) } ?? true
            if fresh && (known || now - cached.fetched < Self.unknownKeyRefetchInterval) { return cached.keys }
        }
        let url: String
        switch source {
        case .fixed(let keys): return keys
        case .url(let jwks): url = jwks
        case .discovery(let domain): url = try await Self.discoverJWKSURL(issuer: domain, timeout: fetchTimeout)
        }
        let keys = try await Self.fetchKeySet(url, timeout: fetchTimeout)
        cache.withLock { $0 = Cached(keys: keys, fetched: now) }
        return keys
    }

    // MARK: Loading

    static func parse(_ body: [UInt8]) async -> KeySet? {
        guard case .object(let root)? = try? ConvexValue(plainJSON: body), case .array(let keys)? = root["keys"] else {
            return nil
        }
        var ids: Set<String> = []
        for key in keys {
            guard case .object(let fields) = key, let kid = fields["kid"]?.stringValue else { return nil }
            ids.insert(kid)
        }
        let collection = JWTKeyCollection()
        do {
            try await collection.add(jwksJSON: String(decoding: body, as: UTF8.self))
        } catch {
            return nil
        }
        return KeySet(collection: collection, keyIDs: ids)
    }

    /// `data:[<media type>][;base64],<data>`.
    static func decodeDataURI(_ uri: String) -> [UInt8]? {
        guard let comma = uri.firstIndex(of: ",") else { return nil }
        let meta = uri[uri.index(uri.startIndex, offsetBy: 5)..<comma]
        let payload = String(uri[uri.index(after: comma)...])
        if meta.split(separator: ";").contains("base64") {
            return Data(base64Encoded: payload.removingPercentEncoding ?? payload).map { Array($0) }
        }
        return payload.removingPercentEncoding.map { Array($0.utf8) }
    }

    /// `file:///abs/path`, `file:/abs/path` or `file:relative/path`.
    static func filePath(_ reference: String) -> String {
        if reference.hasPrefix("file://"), let url = URL(string: reference), url.isFileURL {
            return url.path
        }
        return String(reference.dropFirst("file:".count))
    }

    private static let jwksMediaTypes = ["application/json", "application/jwk-set+json"]

    /// Fetches a key set, with Convex's error messages (`fetch_jwks`).
    static func fetchKeySet(_ url: String, timeout: Duration) async throws(AuthenticationError) -> KeySet {
        let response: HTTPGetResponse
        do {
            response = try await httpGet(url, timeout: timeout)
        } catch {
            throw .invalidAuthHeader(
                "Could not fetch JWKS from URL '\(url)': \(error). Check that the URL is correct and accessible."
            )
        }
        guard response.status == 200 else {
            throw .invalidAuthHeader(
                "Could not fetch JWKS from URL '\(url)': HTTP \(response.status) \(response.reasonPhrase). Check that the URL is correct and accessible."
            )
        }
        let contentType = response.contentType ?? "unknown"
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let essence = parts.first ?? ""
        let charsetOK = parts.dropFirst().allSatisfy { !$0.hasPrefix("charset=") || $0 == "charset=utf-8" }
        guard jwksMediaTypes.contains(essence), charsetOK else {
            throw .invalidAuthHeader(
                "Invalid Content-Type '\(contentType)' when fetching JWKS from '\(url)'. Expected 'application/json' or 'application/jwk-set+json'."
            )
        }
        guard let keys = await parse(Array(response.body)) else {
            throw .invalidAuthHeader(
                "Invalid JWKS response body from '\(url)'. The response is not valid JSON or doesn't match the expected JWKS format."
            )
        }
        return keys
    }

    /// OIDC discovery: `<issuer>/.well-known/openid-configuration` must name this issuer and a `jwks_uri`.
    static func discoverJWKSURL(issuer: String, timeout: Duration) async throws(AuthenticationError) -> String {
        let failed = "Auth provider discovery of \(issuer) failed"
        let url = "\(issuer.trimmingSuffix("/"))/.well-known/openid-configuration"
        let response: HTTPGetResponse
        do {
            response = try await httpGet(url, timeout: timeout)
        } catch {
            throw .discoveryFailed(failed)
        }
        guard response.status == 200 else {
            throw .discoveryFailed(
                "\(failed): \(response.status) \(String(decoding: response.body.prefix(1000), as: UTF8.self))")
        }
        guard case .object(let document)? = try? ConvexValue(plainJSON: Array(response.body)),
            let jwksURI = document["jwks_uri"]?.stringValue,
            let documentIssuer = document["issuer"]?.stringValue,
            documentIssuer.trimmingSuffix("/") == issuer.trimmingSuffix("/")
        else {
            throw .discoveryFailed(failed)
        }
        return jwksURI
    }
}

struct HTTPGetResponse: Sendable {
    var status: Int
    var reasonPhrase: String
    var contentType: String?
    var body: Data
}

/// One HTTP GET within `timeout`.
func httpGet(_ url: String, timeout: Duration) async throws(HTTPFetchError) -> HTTPGetResponse {
    let response = try await httpFetch(.GET, url, headers: [("Accept", "application/json")], timeout: timeout)
    return HTTPGetResponse(
        status: response.status, reasonPhrase: response.reasonPhrase, contentType: response.header("Content-Type"),
        body: Data(response.body))
}
