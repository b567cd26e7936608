import Clocks
import ConvexValues
import Foundation
import HTTPFields
import Testing

@testable import ConvexGateway

struct AccessControlTests {
    static func request(
        _ path: String, method: String = "GET", headers: [String: String] = [:], remote: String? = "127.0.0.1"
    ) -> GatewayRequest {
        GatewayRequest(
            method: method, rawPath: path, headers: ["Host": "127.0.0.1"].merging(headers) { _, given in given },
            remoteAddress: remote)
    }

    @Test func apiKeyGuardsEverythingButProbesAndTheContract() throws {
        var configuration = AccessConfiguration()
        configuration.apiKey = try Secret("k-123", source: "test")
        let access = AccessControl(configuration: configuration)
        let missing = try #require(access.answer(to: Self.request("/query/messages:list")))
        #expect(missing.status == 401)
        #expect(String(decoding: missing.body, as: UTF8.self).hasPrefix(#"{"error":{"code":"InvalidAPIKey","#))
        #expect(missing.headers.contains { $0.0 == "WWW-Authenticate" })
        let wrong = try #require(access.answer(to: Self.request("/metrics", headers: ["X-API-Key": "k-124"])))
        #expect(wrong.status == 401)
        #expect(
            access.answer(to: Self.request("/query/messages:list", headers: ["x-api-key": "k-123"])).map(\.status)
                == nil)
        for open in ["/healthz", "/readyz", "/openapi.yaml", "/client.js"] {
            #expect(access.answer(to: Self.request(open)).map(\.status) == nil, "\(open)")
        }
        #expect(access.answer(to: Self.request("/nowhere"))?.status == 401)
        // What an open route serves only with the key (the functions document) asks for it on its own.
        #expect(throws: GatewayError.invalidAPIKey(missing: true)) {
            try access.requireAPIKey(Self.request("/openapi.yaml"))
        }
        #expect(throws: GatewayError.invalidAPIKey(missing: false)) {
            try access.requireAPIKey(Self.request("/openapi.yaml", headers: ["X-API-Key": "k-124"]))
        }
        try access.requireAPIKey(Self.request("/openapi.yaml", headers: ["X-API-Key": "k-123"]))
        try AccessControl(configuration: AccessConfiguration()).requireAPIKey(Self.request("/openapi.yaml"))
    }

    @Test func preflightAndOriginChecks() throws {
        var configuration = AccessConfiguration()
        configuration.cors = CORSPolicy(origins: ["https://app.test"])
        configuration.apiKey = try Secret("k", source: "test")
        let access = AccessControl(configuration: configuration)
        let preflightRequest = Self.request(
            "/mutation/messages:send", method: "OPTIONS",
            headers: ["Origin": "https://app.test", "Access-Control-Request-Method": "POST"])
        let preflight = try #require(access.answer(to: preflightRequest))
        #expect(preflight.status == 204)
        #expect(
            preflight.headers.contains { $0.0 == "Access-Control-Allow-Methods" && $0.1 == CORSPolicy.allowedMethods })
        let foreign = try #require(
            access.answer(to: Self.request("/query/x:y", headers: ["Origin": "https://evil.test"])))
        #expect(foreign.status == 403)
        #expect(String(decoding: foreign.body, as: UTF8.self).contains("OriginNotAllowed"))
        #expect(
            access.responseHeaders(for: Self.request("/healthz", headers: ["Origin": "https://app.test"])).count >= 1)
        #expect(access.responseHeaders(for: Self.request("/healthz")).isEmpty)

        let off = AccessControl(configuration: AccessConfiguration())
        #expect(
            off.answer(to: Self.request("/query/x:y", method: "OPTIONS", headers: ["Origin": "https://any.test"])).map(
                \.status) == nil)
        #expect(off.responseHeaders(for: Self.request("/healthz", headers: ["Origin": "https://any.test"])).isEmpty)
    }

    /// The access stage prepares each configured origin's headers once; they must be what the policy gives, and an
    /// origin sent in another letter case, or any origin under `*` with credentials, is echoed as sent.
    @Test(arguments: [
        (["https://app.test", "http://localhost:3000"], false, "https://app.test", "https://app.test"),
        (["https://app.test", "http://localhost:3000"], false, "http://localhost:3000", "http://localhost:3000"),
        (["https://app.test"], true, "https://app.test", "https://app.test"),
        (["https://app.test"], false, "https://APP.test", "https://APP.test"),
        (["*"], false, "https://any.test", "*"),
        (["*"], true, "https://any.test", "https://any.test"),
    ])
    func allowedOriginsGetThePolicysHeaders(origins: [String], credentials: Bool, origin: String, allowed: String)
        throws
    {
        var configuration = AccessConfiguration()
        configuration.cors = CORSPolicy(origins: origins, allowCredentials: credentials)
        let access = AccessControl(configuration: configuration)
        let headers = access.responseHeaders(for: Self.request("/query/x:y", headers: ["Origin": origin]))
        let expected = configuration.cors.responseHeaders(origin: origin)
        #expect(headers.map { "\($0.0): \($0.1)" } == expected.map { "\($0.0): \($0.1)" })
        #expect(headers.first { $0.0 == "Access-Control-Allow-Origin" }?.1 == allowed)
        let other = access.answer(to: Self.request("/query/x:y", headers: ["Origin": origin + "x"]))
        #expect(other?.status == (origins == ["*"] ? nil : 403), "an origin one byte longer")
    }

    /// An empty `Origin` gets an answer every header of which has a value (libmicrohttpd refuses an empty one, which
    /// made a 500): `*` alone without an origin to echo, else 403.
    @Test(
        arguments: [(["*"], false, nil), (["*"], true, 403), (["https://app.test"], true, 403)]
            as [([String], Bool, Int?)])
    func anEmptyOriginGetsAProperAnswer(origins: [String], credentials: Bool, status: Int?) {
        var configuration = AccessConfiguration()
        configuration.cors = CORSPolicy(origins: origins, allowCredentials: credentials)
        let access = AccessControl(configuration: configuration)
        let request = Self.request("/mutation/x:y", method: "POST", headers: ["Origin": ""])
        let answer = access.answer(to: request)
        #expect(answer?.status == status)
        let headers = answer?.headers ?? access.responseHeaders(for: request)
        #expect(headers.allSatisfy { !$0.1.isEmpty }, "\(headers)")
        if status == nil { #expect(headers.contains { $0.0 == "Access-Control-Allow-Origin" && $0.1 == "*" }) }
    }

    /// The cross-site check (CrossSiteCheck.swift): a state-changing request that the auth cookie alone authenticates
    /// must come from the gateway's own origin or a CORS origin, with a JSON body.
    @Test(
        arguments: [
            // (method, path, headers besides the cookie, body, refused)
            ("POST", "/mutation/a:b", ["Origin": "https://evil.test", "Content-Type": "application/json"], "{}", true),
            ("POST", "/mutation/a:b", ["Origin": "null", "Content-Type": "application/json"], "{}", true),
            ("POST", "/mutation/a:b", ["Origin": "", "Content-Type": "application/json"], "{}", true),
            ("POST", "/action/a:b", ["Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"], "{}", true),
            ("POST", "/action/a:b", ["Sec-Fetch-Site": "same-site", "Content-Type": "application/json"], "{}", true),
            ("POST", "/mutation/a:b", ["Origin": "https://gw.test", "Content-Type": "text/plain"], "{}", true),
            (
                "POST", "/mutation/a:b",
                ["Origin": "https://gw.test", "Content-Type": "application/x-www-form-urlencoded"],
                "a=1", true
            ),
            (
                "POST", "/mutation/a:b",
                ["Origin": "https://gw.test", "Content-Type": "multipart/form-data; boundary=x"],
                "", true
            ),
            ("POST", "/mutation/a:b", [:], "{}", true),
            ("POST", "/stream-tickets", ["Origin": "https://evil.test"], "", true),
            ("POST", "/query/a:b", ["Origin": "https://evil.test", "Content-Type": "application/json"], "{}", true),
            // Allowed: its own origin, and no Origin (a client that is not a browser).
            ("POST", "/mutation/a:b", ["Origin": "https://gw.test", "Content-Type": "application/json"], "{}", false),
            (
                "POST", "/mutation/a:b",
                ["Origin": "HTTPS://GW.TEST", "Content-Type": "application/json; charset=utf-8"],
                "{}", false
            ),
            (
                "POST", "/mutation/a:b", ["Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"], "{}",
                false
            ),
            ("POST", "/mutation/a:b", ["Content-Type": "application/json"], "{}", false),
            ("POST", "/stream-tickets", ["Origin": "https://gw.test"], "", false),
            ("POST", "/stream-tickets", [:], "", false),
            // Not the cookie's: a bearer token wins over it; safe methods; routes that do not act for the caller
            // (refused all the same when they come from another site, as every request that changes state).
            ("POST", "/mutation/a:b", ["Origin": "https://evil.test", "Authorization": "Bearer t"], "a=1", false),
            ("GET", "/query/a:b", ["Origin": "https://evil.test"], "", false),
            ("HEAD", "/query/a:b", ["Sec-Fetch-Site": "cross-site"], "", false),
            ("POST", "/nowhere", ["Origin": "https://evil.test", "Content-Type": "text/plain"], "{}", false),
        ] as [(String, String, [String: String], String, Bool)])
    func theAuthCookieActsOnlyForItsOwnSite(
        method: String, path: String, headers: [String: String], body: String, refused: Bool
    ) throws {
        var configuration = AccessConfiguration()
        configuration.authCookie = "convex_jwt"
        let access = AccessControl(configuration: configuration)
        var fields = headers
        fields["Host"] = "gw.test"
        fields["Cookie"] = "theme=dark; convex_jwt=header.payload.sig"
        var request = Self.request(path, method: method, headers: fields)
        request.body = Array(body.utf8)
        // A request from another site that changes state is refused whoever it acts as (no preflight allowed it:
        // CORS is off); the rest of the rows are the cookie's own rules.
        let fromAnotherSite =
            headers["Origin"].map { $0.lowercased() != "https://gw.test" }
            ?? (headers["Sec-Fetch-Site"] == "cross-site")
        let crossSite = fromAnotherSite && method == "POST"
        let answer = access.answer(to: request)
        if refused || crossSite {
            let refusal = try #require(answer, "\(method) \(path) \(headers)")
            #expect(refusal.status == 403)
            #expect(String(decoding: refusal.body, as: UTF8.self).contains(#""code":"CrossSiteRequest""#))
        } else {
            #expect(answer.map(\.status) == nil, "\(method) \(path) \(headers)")
        }
        // Without the cookie, or on a gateway that reads none, only the request from another site is refused.
        var anonymous = request
        anonymous.headers["cookie"] = nil
        #expect(access.answer(to: anonymous).map(\.status) == (crossSite ? 403 : nil), "\(method) \(path) \(headers)")
        #expect(
            AccessControl(configuration: AccessConfiguration()).answer(to: request).map(\.status)
                == (crossSite ? 403 : nil))
    }

    @Test func theCrossSiteCheckAdmitsTheCORSOriginsButNotAWildcard() {
        var configuration = AccessConfiguration()
        configuration.authCookie = "convex_jwt"
        configuration.cors = CORSPolicy(origins: ["https://app.test"])
        let listed = AccessControl(configuration: configuration)
        configuration.cors = CORSPolicy(origins: ["*"])
        let wildcard = AccessControl(configuration: configuration)
        let request = Self.request(
            "/mutation/a:b", method: "POST",
            headers: [
                "Origin": "https://app.test", "Host": "gw.test", "Cookie": "convex_jwt=t",
                "Content-Type": "application/json",
            ])
        #expect(listed.answer(to: request).map(\.status) == nil)
        #expect(wildcard.answer(to: request)?.status == 403, "* lets any site read, never act as the user")
        var withToken = request
        withToken.headers["authorization"] = "Bearer t"
        #expect(wildcard.answer(to: withToken).map(\.status) == nil)
    }

    @Test func theGatewaysOwnOriginIsItsHost() throws {
        let check = try #require(CrossSiteCheck(cookieName: "convex_jwt", cors: CORSPolicy()))
        #expect(check.allows(origin: "https://gw.test", host: "gw.test"))
        #expect(check.allows(origin: "https://gw.test", host: "gw.test:443"))
        #expect(check.allows(origin: "http://gw.test:8080", host: "GW.test:8080"))
        #expect(!check.allows(origin: "https://gw.test", host: "gw.test:8443"))
        #expect(!check.allows(origin: "https://gw.test.evil.test", host: "gw.test"))
        #expect(!check.allows(origin: "https://gw.test", host: nil))
        #expect(!check.allows(origin: "null", host: "gw.test"))
        #expect(CrossSiteCheck(cookieName: nil, cors: CORSPolicy()) == nil)
    }

    @Test func rateLimitCountsFunctionRoutesPerAddress() throws {
        var configuration = AccessConfiguration()
        configuration.rateLimit = 0.001
        configuration.rateLimitBurst = 2
        let access = AccessControl(configuration: configuration)
        #expect(access.answer(to: Self.request("/query/a:b")).map(\.status) == nil)
        #expect(access.answer(to: Self.request("/mutation/a:b", method: "POST")).map(\.status) == nil)
        let limited = try #require(access.answer(to: Self.request("/subscribe/a:b")))
        #expect(limited.status == 429)
        #expect(limited.headers.contains { $0.0 == "Retry-After" && Int($0.1).map { $0 >= 1 } == true })
        #expect(access.answer(to: Self.request("/healthz")).map(\.status) == nil)
        #expect(access.answer(to: Self.request("/metrics")).map(\.status) == nil)
        #expect(access.answer(to: Self.request("/query/a:b", remote: "127.0.0.2")).map(\.status) == nil)
    }
}

/// The access stage's decision read as the tests ask it: the answer to send instead, or the headers to add.
extension AccessControl {
    func answer(to request: GatewayRequest) -> GatewayResponse? {
        if case .answer(let response) = decide(request, accessClass: Self.accessClass(of: request)) { return response }
        return nil
    }

    func responseHeaders(for request: GatewayRequest) -> [(String, String)] {
        if case .proceed(let headers) = decide(request, accessClass: Self.accessClass(of: request)) { return headers }
        return []
    }

    /// The access class GatewayCore gives the access stage: the parsed route's, else the raw path's.
    static func accessClass(of request: GatewayRequest) -> AccessClass {
        (try? Route(rawPath: request.rawPath[...]))?.accessClass ?? Route.accessClass(rawPath: request.rawPath[...])
    }
}
