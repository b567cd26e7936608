import Foundation
import HTTPFields

extension GatewayError {
    static func crossSiteRequest(_ message: String) -> GatewayError {
        GatewayError(code: .crossSiteRequest, message: message)
    }

    /// A request that changes state from another site (its `Origin`, or `Sec-Fetch-Site: cross-site` without one)
    /// that CORS does not allow.
    static func crossSiteRequest(fromOrigin origin: String?) -> GatewayError {
        let who = origin.map { "A request from origin '\(printable($0))'" } ?? "A cross-site request"
        return crossSiteRequest(
            who + " may not change anything here: only the gateway's own pages and the origins --cors-origins "
                + "allows may call mutations and actions")
    }
}

/// Cross-site request forgery, refused. A browser sends the auth cookie with requests other sites make (a form's
/// `POST`, a `fetch` in `no-cors` mode, a beacon), so a request that changes state (any method but `GET`, `HEAD` and
/// `OPTIONS`, on a route that acts for the caller: calls and `POST /stream-tickets`) and that the cookie alone
/// authenticates (no `Authorization` header, as ``CallerCredentials`` reads them) must come from a site allowed to act
/// as the user, with a body no other site can send without a CORS preflight:
///
/// - an `Origin` names the request's own host (its `Host`) or one of the CORS origins (`*` names none: it never admits
///   credentials); without `Origin`, `Sec-Fetch-Site: cross-site` or `same-site` is refused, and neither header (a
///   non-browser client) passes;
/// - the body is JSON (`application/json` or another `+json` type), which no form can send; without `Content-Type`,
///   the body is empty.
///
/// Anything else is refused with 403 `CrossSiteRequest`, before the function runs.
struct CrossSiteCheck: Sendable {
    /// The auth cookie's name.
    let cookieName: String
    /// The CORS origins, lower-cased, without `*`.
    let origins: Set<String>

    /// The check for a gateway that reads the auth cookie `cookieName`; `nil` without one (nothing to check).
    init?(cookieName: String?, cors: CORSPolicy) {
        guard let cookieName else { return nil }
        self.cookieName = cookieName
        origins = Set(cors.origins.filter { $0 != "*" })
    }

    /// The methods that never change state.
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS"]

    /// Why `request`, on a route that acts for the caller, is refused; `nil` when it may go on.
    func refusal(of request: GatewayRequest) -> GatewayError? {
        guard !Self.safeMethods.contains(request.method), request.header(HeaderName.authorization) == nil,
            let cookie = CookieHeader.value(named: cookieName, in: request.header(HeaderName.cookie)), !cookie.isEmpty
        else {
            return nil
        }
        if let origin = request.header(HeaderName.origin) {
            guard allows(origin: origin, host: request.header(HeaderName.host)) else {
                return .crossSiteRequest(
                    "Origin '\(printable(origin))' may not act as the signed-in user of the auth cookie; only the "
                        + "gateway's own origin and its CORS origins may")
            }
        } else if let site = request.header(HeaderName.secFetchSite)?.lowercased(),
            site == "cross-site" || site == "same-site"
        {
            return .crossSiteRequest(
                "A \(site) request may not act as the signed-in user of the auth cookie; send an Origin the gateway "
                    + "allows")
        }
        if let contentType = request.header(HeaderName.contentType) {
            guard Self.isJSON(contentType) else {
                return .crossSiteRequest(
                    "A request that the auth cookie authenticates must send its body as application/json, not "
                        + "'\(printable(contentType))'")
            }
        } else if request.sendsBody {
            return .crossSiteRequest(
                "A request that the auth cookie authenticates must send its body as application/json; this one has "
                    + "no Content-Type")
        }
        return nil
    }

    /// Whether `origin` may act as the cookie's user: a CORS origin, or the request's own (its host and port are
    /// `host`, the request's `Host`; the scheme is not compared, since a proxy in front may end TLS).
    func allows(origin: String, host: String?) -> Bool {
        origins.contains(origin.lowercased()) || Self.isOwnOrigin(origin, host: host)
    }

    /// Whether `origin` (an `Origin` field) is the request's own: its host and port are `host`, the request's `Host`
    /// (the scheme is not compared, since a proxy in front may end TLS). `null` never is.
    static func isOwnOrigin(_ origin: String, host: String?) -> Bool {
        let origin = origin.lowercased()
        guard let host = host?.lowercased(), !host.isEmpty, let schemeEnd = origin.range(of: "://") else {
            return false
        }
        let scheme = String(origin[..<schemeEnd.lowerBound])
        let authority = String(origin[schemeEnd.upperBound...])
        if authority == host { return true }
        // `Origin` leaves a default port out; `Host` may write it.
        switch scheme {
        case "https": return authority + ":443" == host
        case "http": return authority + ":80" == host
        default: return false
        }
    }

    /// Whether a `Content-Type` names JSON: `application/json` or a `+json` type, parameters aside.
    static func isJSON(_ contentType: String) -> Bool {
        let mediaType =
            contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
        return mediaType == "application/json" || (mediaType.hasSuffix("+json") && mediaType.contains("/"))
    }
}
