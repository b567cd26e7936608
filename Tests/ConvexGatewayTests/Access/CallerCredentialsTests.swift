import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

/// Reading one cookie out of a `Cookie` header.
@Suite struct CookieHeaderTests {
    @Test(arguments: [
        ("jwt=abc", "abc"),
        ("a=1; jwt=abc; b=2", "abc"),
        ("a=1;jwt=abc", "abc"),
        ("  jwt = abc  ", "abc"),
        (#"jwt="abc""#, "abc"),
        ("jwt=a=b=c", "a=b=c"),
        ("flag; jwt=abc", "abc"),
        ("jwt=first; jwt=second", "first"),
        ("jwt=", ""),
    ])
    func findsTheNamedCookie(header: String, value: String) {
        #expect(CookieHeader.value(named: "jwt", in: header) == value[...])
    }

    @Test(arguments: ["", "other=1", "xjwt=1; jwtx=2", "JWT=abc", "jwt"])
    func missesOtherCookies(header: String) {
        #expect(CookieHeader.value(named: "jwt", in: header) == nil)
    }

    @Test func findsEveryCookieOfAName() {
        #expect(CookieHeader.values(named: "jwt", in: "jwt=first; a=1; jwt=\"second\"") == ["first", "second"])
        #expect(CookieHeader.values(named: "jwt", in: "a=1") == [])
        #expect(CookieHeader.values(named: "jwt", in: nil) == [])
    }

    @Test func validNames() {
        #expect(CookieHeader.isValidName("convex_jwt"))
        #expect(CookieHeader.isValidName("__Host-session"))
        for bad in ["", "a b", "a;b", "a=b", "é", "a,b", "a\"b"] {
            #expect(!CookieHeader.isValidName(bad), "\(bad)")
        }
    }
}

/// Where a caller's token comes from: the `Authorization` header, then a stream ticket, then the auth cookie.
@Suite struct CallerCredentialsTests {
    static let now: Int64 = 1_800_000_000_000

    static func credentials(cookie: String? = "jwt") throws -> CallerCredentials {
        CallerCredentials(cookieName: cookie, tickets: try StreamTicketTests.tickets(), now: { Self.now })
    }

    static func identity(
        _ target: String, method: String = "GET", headers: [String: String] = [:],
        credentials: CallerCredentials? = nil
    ) throws -> (UpstreamIdentity, QueryString) {
        let parts = target.split(separator: "?", maxSplits: 1)
        let request = GatewayRequest(
            method: method, rawPath: String(parts[0]), rawQuery: parts.count > 1 ? String(parts[1]) : nil,
            headers: headers)
        let parsed = try ParsedRequest(request, defaultFormat: .plain, credentials: credentials ?? Self.credentials())
        return (parsed.identity, parsed.query)
    }

    @Test func theHeaderComesFirstThenTheTicketThenTheCookie() throws {
        let tickets = try StreamTicketTests.tickets()
        let ticketToken = StreamTicketTests.jwt(#"{"sub":"ticket"}"#)
        let ticket = try tickets.issue(for: ticketToken, now: Self.now).ticket
        let header = ["Authorization": "Bearer header.token.x", "Cookie": "jwt=cookie.token.x"]
        let target = "/subscribe/m:f?ticket=\(ticket)&n=1"
        #expect(try Self.identity(target, headers: header).0 == .bearer("header.token.x"))
        let (fromTicket, query) = try Self.identity(target, headers: ["Cookie": "jwt=cookie.token.x"])
        #expect(fromTicket == .bearer(ticketToken))
        #expect(query.parameters == [QueryString.Parameter(name: "n", value: "1")], "the ticket is not an argument")
        #expect(
            try Self.identity("/subscribe/m:f", headers: ["Cookie": "jwt=cookie.token.x"]).0
                == .bearer("cookie.token.x"))
        #expect(try Self.identity("/subscribe/m:f").0 == .anonymous)
    }

    @Test func theCookieActsOnEveryFunctionRouteButNotOnTheGatewaysOwn() throws {
        let cookie = ["Cookie": "theme=dark; jwt=\"cookie.token.x\""]
        for target in ["/query/m:f", "/subscribe/m:f"] {
            #expect(try Self.identity(target, headers: cookie).0 == .bearer("cookie.token.x"), "\(target)")
        }
        #expect(try Self.identity("/healthz", headers: cookie).0 == .anonymous)
        // The same token twice is one token.
        let twice = ["Cookie": "jwt=cookie.token.x; theme=dark; jwt=\"cookie.token.x\""]
        #expect(try Self.identity("/query/m:f", headers: twice).0 == .bearer("cookie.token.x"))
        #expect(try Self.identity("/query/m:f", headers: ["Cookie": "theme=dark; jwt="]).0 == .anonymous)
        #expect(
            try Self.identity("/query/m:f", headers: cookie, credentials: Self.credentials(cookie: nil)).0 == .anonymous
        )
    }

    @Test func aTicketIsReadOnlyOnStreamRoutes() throws {
        let (identity, query) = try Self.identity("/query/m:f?ticket=abc")
        #expect(identity == .anonymous)
        #expect(
            query.values(named: "ticket") == ["abc"], "on /query a 'ticket' parameter is an argument like any other")
    }

    @Test(
        arguments: [
            (["Cookie": "jwt=bad token"], "/query/m:f", 401),
            (["Cookie": "jwt=\u{7F}x"], "/subscribe/m:f", 401),
            (["Authorization": "Basic abc"], "/query/m:f", 401),
            ([:], "/subscribe/m:f?ticket=", 401),
            ([:], "/subscribe/m:f?ticket", 401),
            ([:], "/subscribe/m:f?ticket=abc", 401),
            ([:], "/subscribe/m:f?ticket=a&ticket=b", 400),
            (["Cookie": "jwt=a.b.c; theme=dark; jwt=d.e.f"], "/query/m:f", 401),
            (["Cookie": "jwt=; jwt=d.e.f"], "/subscribe/m:f", 401),
        ] as [([String: String], String, Int)])
    func badCredentialsAreRefused(headers: [String: String], target: String, status: Int) throws {
        let refusal = StreamTicketTests.refusal { try Self.identity(target, headers: headers) }
        #expect(refusal?.status == status, "\(String(describing: refusal))")
        if status == 401 { #expect(refusal?.code == .unauthenticated) }
    }

    @Test func aMethodTheRouteRefusesIsAnsweredBeforeItsCredentialsAreRead() {
        let refusal = StreamTicketTests.refusal {
            try Self.identity("/subscribe/m:f?ticket=a&ticket=b", method: "POST", headers: ["Cookie": "jwt=bad token"])
        }
        #expect(refusal?.status == 405, "405, not the doubled ticket's 400: \(String(describing: refusal))")
    }
}
