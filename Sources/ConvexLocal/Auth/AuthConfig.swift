import ConvexValues
import Foundation

/// The identity providers a deployment trusts, in the shapes of Convex's `auth.config.ts`, read from JSON:
///
/// ```json
/// {"providers": [
///   {"type": "customJwt", "issuer": "https://auth.example.com", "jwks": "https://auth.example.com/.well-known/jwks.json",
///    "algorithm": "RS256", "applicationID": "my-app"},
///   {"domain": "https://tenant.auth0.com", "applicationID": "my-client-id"}
/// ]}
/// ```
///
/// `jwks` is an `http(s)` URL (fetched when a token needs it, cached for ``AuthProvider/keyCacheLifetime``), a
/// `file:` path or a `data:` URI (both read once, when the deployment starts).
public struct AuthConfig: Sendable, Hashable {
    public var providers: [AuthProvider]
    /// How long one fetch of a provider's discovery document or remote key set may take (not part of the JSON).
    public var keyFetchTimeout: Duration = .seconds(10)

    public init(providers: [AuthProvider], keyFetchTimeout: Duration = .seconds(10)) {
        self.providers = providers
        self.keyFetchTimeout = keyFetchTimeout
    }

    /// Parses the JSON text of an auth config.
    /// - Throws: ``AuthConfigError`` naming the offending provider and field.
    public init(json: some Collection<UInt8>) throws(AuthConfigError) {
        let value: ConvexValue
        do {
            value = try ConvexValue(plainJSON: json)
        } catch {
            throw AuthConfigError("The auth config is not valid JSON: \(error.description)")
        }
        guard case .object(let root) = value, case .array(let items)? = root["providers"] else {
            throw AuthConfigError(#"The auth config must be a JSON object {"providers": [...]}"#)
        }
        if let extra = root.keys.first(where: { $0 != "providers" }) {
            throw AuthConfigError("Unknown key \"\(extra)\" in the auth config (only \"providers\" is allowed)")
        }
        providers = try items.enumerated().map { (index, item) throws(AuthConfigError) in
            try AuthProvider(item, index: index)
        }
    }

    /// Reads and parses an auth config file.
    /// - Throws: ``AuthConfigError`` when the file cannot be read or is not a valid config.
    public init(contentsOfFile path: String) throws(AuthConfigError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AuthConfigError("Cannot read the auth config file \(path)")
        }
        try self.init(json: data)
    }
}

/// One trusted identity provider.
public enum AuthProvider: Sendable, Hashable {
    /// Signing algorithms of `customJwt` providers (the ones Convex accepts).
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        case rs256 = "RS256"
        case es256 = "ES256"
    }

    /// A JWT issuer with its own key set: Convex's `type: "customJwt"`.
    case customJWT(issuer: String, jwks: String, algorithm: Algorithm, applicationID: String?)
    /// An OpenID Connect provider whose keys are found through `<domain>/.well-known/openid-configuration`.
    case oidc(domain: String, applicationID: String)

    /// How long keys fetched over HTTP are used before they are fetched again (a token with an unknown `kid`
    /// refetches sooner).
    public static let keyCacheLifetime: Duration = .seconds(300)

    /// The issuer tokens must carry: the configured issuer or domain, with `https://` added when it has no scheme.
    public var issuer: String {
        switch self {
        case .customJWT(let issuer, _, _, _): Self.withScheme(issuer)
        case .oidc(let domain, _): Self.withScheme(domain)
        }
    }

    public var applicationID: String? {
        switch self {
        case .customJWT(_, _, _, let id): id
        case .oidc(_, let id): id
        }
    }

    static func withScheme(_ url: String) -> String {
        url.hasPrefix("https://") || url.hasPrefix("http://") ? url : "https://\(url)"
    }

    /// Convex's matching rule (`crates/common/src/auth.rs`): the issuers agree up to a trailing slash and an added
    /// `https://`, and the audience contains the application ID when one is configured.
    func matches(issuer tokenIssuer: String, audiences: [String]) -> Bool {
        if let applicationID, !audiences.contains(applicationID) { return false }
        return Self.withScheme(tokenIssuer).trimmingSuffix("/") == issuer.trimmingSuffix("/")
    }

    /// How Convex lists the provider in its `NoAuthProvider` message.
    var summary: String {
        switch self {
        case .customJWT(let issuer, _, _, let id):
            "CustomJWT(issuer=\(Self.withScheme(issuer)), app_id=\(id ?? "none"))"
        case .oidc(let domain, let id): "OIDC(domain=\(Self.withScheme(domain)), app_id=\(id))"
        }
    }

    init(_ value: ConvexValue, index: Int) throws(AuthConfigError) {
        guard case .object(let fields) = value else {
            throw AuthConfigError("Provider \(index) must be a JSON object")
        }
        func string(_ key: String, required: Bool = true) throws(AuthConfigError) -> String? {
            switch fields[key] {
            case .string(let s)? where !s.isEmpty: return s
            case nil where !required: return nil
            case nil: throw AuthConfigError("Provider \(index) is missing \"\(key)\"")
            default: throw AuthConfigError("Provider \(index): \"\(key)\" must be a non-empty string")
            }
        }
        let type = try string("type", required: false)
        switch type {
        case "customJwt"?:
            try Self.checkKeys(fields, allowed: ["type", "issuer", "jwks", "algorithm", "applicationID"], index: index)
            let algorithmName = try string("algorithm")!
            guard let algorithm = Algorithm(rawValue: algorithmName) else {
                throw AuthConfigError(
                    "Provider \(index): unsupported algorithm \"\(algorithmName)\" (use RS256 or ES256)")
            }
            let jwks = try string("jwks")!
            guard
                jwks.hasPrefix("https://") || jwks.hasPrefix("http://") || jwks.hasPrefix("file:")
                    || jwks.hasPrefix("data:")
            else {
                throw AuthConfigError("Provider \(index): \"jwks\" must be an http(s) URL, a file: path or a data: URI")
            }
            self = .customJWT(
                issuer: try string("issuer")!, jwks: jwks, algorithm: algorithm,
                applicationID: try string("applicationID", required: false))
        case nil:
            try Self.checkKeys(fields, allowed: ["domain", "applicationID"], index: index)
            self = .oidc(domain: try string("domain")!, applicationID: try string("applicationID")!)
        case let other?:
            throw AuthConfigError(
                "Provider \(index): unknown type \"\(other)\" (use \"customJwt\", or no type for OIDC)")
        }
    }

    private static func checkKeys(_ fields: [String: ConvexValue], allowed: Set<String>, index: Int)
        throws(AuthConfigError)
    {
        if let extra = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw AuthConfigError(
                "Provider \(index): unknown key \"\(extra)\" (allowed: \(allowed.sorted().joined(separator: ", ")))")
        }
    }
}

/// An auth config that cannot be used.
public struct AuthConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension String {
    func trimmingSuffix(_ suffix: Character) -> Substring {
        var text = self[...]
        while text.last == suffix { text = text.dropLast() }
        return text
    }
}
