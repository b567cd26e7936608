import Foundation
import HTTPFields

/// Cross-origin resource sharing for the REST routes and the event streams.
///
/// With no origins configured CORS is off: no CORS headers, and `OPTIONS` is an ordinary unsupported method (405).
/// With origins configured, a request carrying an allowed `Origin` gets `Access-Control-Allow-Origin` (and
/// `-Allow-Credentials`, `-Expose-Headers`, `Vary: Origin`) on every answer, streams included; a preflight gets 204
/// with the allowed methods, headers and max age; a request from any other origin is refused with 403
/// `OriginNotAllowed` (a browser would not let the page read the answer anyway, and refusing keeps other sites from
/// triggering mutations).
public struct CORSPolicy: Sendable, Hashable {
    /// Allowed origins, lower-cased (`https://app.example.com`), or `*` for any.
    public var origins: [String]
    /// Whether browsers may send credentials (`Access-Control-Allow-Credentials: true`); the request's origin is then
    /// echoed, never `*`, as the CORS protocol requires. Not with `*` among the origins: every site could then act,
    /// and read the answers, as the signed-in user (``check()``).
    public var allowCredentials: Bool
    /// How long a browser may cache a preflight answer, in seconds.
    public var maxAgeSeconds: Int
    /// Response headers a page may read beyond the CORS-safelisted ones.
    public var exposedHeaders: [String] {
        didSet { exposedHeadersField = exposedHeaders.joined(separator: ", ") }
    }
    /// `exposedHeaders` as the `Access-Control-Expose-Headers` value, joined once rather than on every answer.
    private var exposedHeadersField: String

    /// Methods the gateway's routes use.
    public static let allowedMethods = "GET, HEAD, POST, OPTIONS"
    /// Request headers a page may send.
    public static let allowedHeaders =
        "Accept, Authorization, Cache-Control, Content-Type, Convex-Min-Timestamp, Convex-Session-Id, If-None-Match, "
        + "Last-Event-ID, Prefer, " + HeaderName.xAPIKey

    public init(
        origins: [String] = [], allowCredentials: Bool = false, maxAgeSeconds: Int = 600,
        exposedHeaders: [String] = [HeaderName.eTag, HeaderName.retryAfter, HeaderName.convexTimestamp]
    ) {
        self.origins = origins.map { $0.lowercased() }
        self.allowCredentials = allowCredentials
        self.maxAgeSeconds = maxAgeSeconds
        self.exposedHeaders = exposedHeaders
        self.exposedHeadersField = exposedHeaders.joined(separator: ", ")
    }

    /// Whether CORS is on.
    public var isEnabled: Bool { !origins.isEmpty }

    /// Refuses a policy that is unsafe to serve: `*` with credentials would let every site act, and read the answers,
    /// as the signed-in user. ``Gateway/start()`` calls it; the `convex-gateway` settings refuse the same.
    /// - Throws: ``CORSOriginError`` saying so.
    public func check() throws(CORSOriginError) {
        if allowCredentials && origins.contains("*") {
            throw CORSOriginError(
                "CORS origin '*' cannot be combined with allowing credentials: every site could act as the signed-in "
                    + "user; list the origins that may send credentials")
        }
    }

    /// Parses a comma-separated origin list: `*`, or origins such as `https://app.example.com` or
    /// `http://localhost:3000` (scheme, host and optional port; no path).
    /// - Throws: ``CORSOriginError`` naming the first bad entry.
    public static func origins(_ text: String) throws(CORSOriginError) -> [String] {
        var origins: [String] = []
        for item in text.split(separator: ",") {
            let origin = item.trimmingCharacters(in: .whitespaces).lowercased()
            if origin.isEmpty { continue }
            if origin == "*" {
                origins.append(origin)
                continue
            }
            guard let schemeEnd = origin.range(of: "://"),
                ["http", "https"].contains(String(origin[..<schemeEnd.lowerBound])),
                case let rest = origin[schemeEnd.upperBound...], !rest.isEmpty,
                !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@"),
                rest.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            else {
                throw CORSOriginError(
                    "CORS origin '\(printable(origin))' is not '*' or scheme://host[:port] (http or https, no path)")
            }
            origins.append(origin)
        }
        return origins
    }

    /// Parses a comma-separated list of response header names (for ``exposedHeaders``); empty entries are skipped.
    /// - Throws: ``CORSOriginError`` naming the first entry that is not a header name.
    public static func headerNames(_ text: String) throws(CORSOriginError) -> [String] {
        var names: [String] = []
        for item in text.split(separator: ",") {
            let name = item.trimmingCharacters(in: .whitespaces)
            if name.isEmpty { continue }
            guard name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }) else {
                throw CORSOriginError("'\(printable(name))' is not a header name")
            }
            names.append(name)
        }
        return names
    }

    /// Whether an `Origin` header value is allowed. An empty one never is: no browser sends it, and it cannot be
    /// echoed in `Access-Control-Allow-Origin`.
    public func allows(origin: String) -> Bool {
        !origin.isEmpty
            && (origins.contains(origin) || origins.contains("*") || origins.contains(origin.lowercased()))
    }

    /// The CORS headers for any answer to a request from an allowed `origin`.
    func responseHeaders(origin: String) -> [(String, String)] {
        var headers: [(String, String)] = []
        headers.reserveCapacity(4)  // built on every answer, the hot path's too: one allocation
        if origins.contains("*") && !allowCredentials {
            headers.append((HeaderName.accessControlAllowOrigin, "*"))
        } else {
            headers.append((HeaderName.accessControlAllowOrigin, origin))
            headers.append((HeaderName.vary, HeaderName.origin))
        }
        if allowCredentials { headers.append((HeaderName.accessControlAllowCredentials, "true")) }
        if !exposedHeaders.isEmpty {
            headers.append((HeaderName.accessControlExposeHeaders, exposedHeadersField))
        }
        return headers
    }

    /// The answer to an `OPTIONS` request when CORS is on (its origin already checked): 204 with what the gateway
    /// allows. The response headers of ``responseHeaders(origin:)`` are added on the way out.
    func preflightResponse() -> GatewayResponse {
        GatewayResponse(
            status: 204,
            headers: [
                (HeaderName.allow, Self.allowedMethods),
                (HeaderName.accessControlAllowMethods, Self.allowedMethods),
                (HeaderName.accessControlAllowHeaders, Self.allowedHeaders),
                (HeaderName.accessControlMaxAge, String(maxAgeSeconds)),
            ],
            body: [])
    }
}

/// A CORS setting that cannot be used (an origin or a header name); the message names the entry.
public struct CORSOriginError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
