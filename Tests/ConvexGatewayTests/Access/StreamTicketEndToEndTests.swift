import Clocks
import ConvexGateway
import ConvexValues
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// Signed-in pages end to end: the auth cookie and stream tickets carry a user's token to streams, each stream sees
/// its own user, tickets travel between replicas sharing a key, and no credential reaches the log.
@Suite("Auth cookie and stream tickets", .timeLimit(.minutes(5)))
struct StreamTicketEndToEndTests {
    static let cookie = "convex_jwt"

    static func jwt(_ subject: String, expiresIn seconds: Double = 3600, now: Double? = nil) -> String {
        guard let now else { return TokenExpiryTests.jwt(subject: subject, expiresIn: seconds) }
        return TokenExpiryTests.jwt(subject: subject, expiresIn: seconds, now: now)
    }

    /// `POST /stream-tickets` answered 201: the ticket.
    static func ticket(from response: TestResponse) throws -> String {
        #expect(response.status == 201, "\(response.text)")
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.header("Content-Type") == "application/json")
        guard case .string(let ticket)? = response.json?["ticket"], case .float64? = response.json?["expiresAt"] else {
            throw TestFailure("no ticket in \(response.text)")
        }
        return ticket
    }

    /// The subject the first event of a `conformance:whoami` stream names.
    static func firstIdentity(_ stream: EventStreamReader) async throws -> String {
        #expect(stream.head.status == 200)
        let event = try #require(try await stream.nextEventAsync())
        return event.data
    }

    @Test("a stream opened with the auth cookie or a ticket sees its own user")
    func cookieAndTicketStreamsSeeTheirUser() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.authCookie = Self.cookie }) { h in
            let ada = Self.jwt("ada-cookie")
            let byCookie = try await h.openStream(
                "/subscribe/conformance:whoami", headers: ["Cookie": "theme=dark; \(Self.cookie)=\(ada); lang=en"])
            defer { byCookie.close() }
            #expect(try await Self.firstIdentity(byCookie).contains("ada-cookie"))
            #expect(byCookie.head.header("Referrer-Policy") == "no-referrer")

            let grace = Self.jwt("grace-ticket")
            let minted = try await h.post(
                "/stream-tickets", json: "", headers: ["Authorization": "Bearer \(grace)"])
            let ticket = try Self.ticket(from: minted)
            #expect(!ticket.contains(grace.split(separator: ".")[1]))
            let byTicket = try await h.openStream("/subscribe/conformance:whoami?ticket=\(ticket)")
            defer { byTicket.close() }
            #expect(try await Self.firstIdentity(byTicket).contains("grace-ticket"))
            #expect(byTicket.head.header("Referrer-Policy") == "no-referrer")

            // A second user's ticket sees that user; the cookie can mint a ticket too.
            let mintedByCookie = try await h.request(
                "POST", "/stream-tickets", headers: ["Cookie": "\(Self.cookie)=\(Self.jwt("linus-cookie"))"])
            let second = try await h.openStream(
                "/subscribe/conformance:whoami?ticket=\(try Self.ticket(from: mintedByCookie))&format=clean")
            defer { second.close() }
            #expect(try await Self.firstIdentity(second).contains("linus-cookie"))

            // The header wins over the ticket, and the ticket over the cookie.
            let both = try await h.openStream(
                "/subscribe/conformance:whoami?ticket=\(ticket)",
                headers: ["Authorization": "Bearer \(Self.jwt("header-wins"))", "Cookie": "\(Self.cookie)=\(ada)"])
            defer { both.close() }
            #expect(try await Self.firstIdentity(both).contains("header-wins"))
            let ticketOverCookie = try await h.openStream(
                "/subscribe/conformance:whoami?ticket=\(ticket)", headers: ["Cookie": "\(Self.cookie)=\(ada)"])
            defer { ticketOverCookie.close() }
            #expect(try await Self.firstIdentity(ticketOverCookie).contains("grace-ticket"))

            // One-shot calls read the cookie too, and anonymous callers stay anonymous.
            let query = try await h.get(
                "/query/conformance:whoami", headers: ["Cookie": "\(Self.cookie)=\(Self.jwt("ada-query"))"])
            #expect(query.status == 200)
            #expect(query.text.contains("ada-query"), "\(query.text)")
            let anonymous = try await h.get("/query/conformance:whoami")
            #expect(anonymous.json?["identity"] == .null, "\(anonymous.text)")
        }
    }

    @Test("a cross-site post with the auth cookie is refused before its mutation runs; JSON from its own site runs")
    func crossSitePostsDoNotActAsTheCookiesUser() async throws {
        let cookie = ["Cookie": "\(Self.cookie)=\(Self.jwt("csrf-ada"))"]
        func headers(_ more: [String: String]) -> [String: String] { cookie.merging(more) { $1 } }
        let forged = #"{"body":"forged","channel":"csrf"}"#
        // CORS off, as by default.
        try await TestGateway.run(.inProcess, configure: { $0.access.authCookie = Self.cookie }) { h in
            // What a form or a no-cors fetch on another site can send, with the cookie the browser adds.
            for contentType in ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"] {
                let refused = try await h.post(
                    "/mutation/messages:send", json: forged,
                    headers: headers(["Origin": "https://evil.test", "Content-Type": contentType]))
                #expect(refused.status == 403, "\(contentType): \(refused.text)")
                #expect(refused.errorCode == "CrossSiteRequest")
            }
            let json = try await h.post(
                "/mutation/messages:send", json: forged,
                headers: headers(["Origin": "https://evil.test", "Content-Type": "application/json"]))
            #expect(json.status == 403)
            let crossSite = try await h.post(
                "/action/messages:send", json: forged,
                headers: headers(["Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"]))
            #expect(crossSite.status == 403)
            let ticket = try await h.request(
                "POST", "/stream-tickets", headers: headers(["Origin": "https://evil.test"]))
            #expect(ticket.status == 403)
            #expect(try await h.get("/query/messages:list?channel=csrf").text == "[]", "nothing forged was sent")

            // From the gateway's own origin with JSON, and from a client that is not a browser, the user posts.
            let own = try await h.post(
                "/mutation/messages:send", json: #"{"body":"from its own page","channel":"csrf"}"#,
                headers: headers(["Origin": "http://127.0.0.1", "Content-Type": "application/json"]))
            #expect(own.status == 200, "\(own.text)")
            let curl = try await h.post(
                "/mutation/messages:send", json: #"{"body":"by curl","channel":"csrf"}"#,
                headers: headers(["Content-Type": "application/json"]))
            #expect(curl.status == 200, "\(curl.text)")
            let sent = try await h.get("/query/messages:list?channel=csrf")
            #expect(sent.text.contains("from its own page") && sent.text.contains("by curl"), "\(sent.text)")
            #expect(!sent.text.contains("forged"))
            // Without the cookie too, a simple POST from another site is refused: no preflight allowed it.
            let anonymous = try await h.post(
                "/mutation/messages:send", json: #"{"body":"anonymous","channel":"csrf-anonymous"}"#,
                headers: ["Origin": "https://evil.test", "Content-Type": "text/plain"])
            #expect(anonymous.status == 403, "\(anonymous.text)")
            #expect(anonymous.errorCode == "CrossSiteRequest")
        }
        // With CORS on, its origins act as the user too, with JSON only.
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.access.authCookie = Self.cookie
                $0.access.cors = CORSPolicy(origins: ["https://app.test"], allowCredentials: true)
            }
        ) { h in
            let allowed = try await h.post(
                "/mutation/messages:send", json: #"{"body":"from the app","channel":"cors"}"#,
                headers: headers(["Origin": "https://app.test", "Content-Type": "application/json"]))
            #expect(allowed.status == 200, "\(allowed.text)")
            #expect(allowed.header("Access-Control-Allow-Origin") == "https://app.test")
            let form = try await h.post(
                "/mutation/messages:send", json: #"{"body":"by a form","channel":"cors"}"#,
                headers: headers(["Origin": "https://app.test", "Content-Type": "text/plain"]))
            #expect(form.status == 403)
            #expect(form.errorCode == "CrossSiteRequest")
            #expect(form.header("Access-Control-Allow-Origin") == "https://app.test", "a page can read why")
            let sent = try await h.get("/query/messages:list?channel=cors")
            #expect(sent.text.contains("from the app") && !sent.text.contains("by a form"), "\(sent.text)")
        }
    }

    @Test("a cookie GET is never answered with the anonymous caller's prepared response")
    func cookieTakesTheFullPath() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.authCookie = Self.cookie }) { h in
            let target = "/query/conformance:whoami"
            _ = try await h.get(target)
            _ = try await h.get(target)
            #expect(h.gateway.core.hotPath.targets.count == 1, "the anonymous answer is remembered")
            let signedIn = try await h.get(target, headers: ["Cookie": "\(Self.cookie)=\(Self.jwt("hot-ada"))"])
            #expect(signedIn.text.contains("hot-ada"), "\(signedIn.text)")
            let otherCookie = try await h.get(target, headers: ["Cookie": "unrelated=1"])
            #expect(otherCookie.json?["identity"] == .null)
        }
    }

    @Test("missing or bad credentials get 401 Unauthenticated with the usual error body")
    func refusals() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.authCookie = Self.cookie }) { h in
            let anonymous = try await h.request("POST", "/stream-tickets")
            #expect(anonymous.status == 401)
            #expect(anonymous.errorCode == "Unauthenticated")
            #expect(anonymous.json?["error"]?["message"] != nil)
            #expect(anonymous.header("WWW-Authenticate") == "Bearer")
            #expect(try await h.get("/stream-tickets").status == 405)

            let notJWT = try await h.request("POST", "/stream-tickets", headers: ["Authorization": "Bearer opaque"])
            #expect(notJWT.status == 401, "\(notJWT.text)")
            let expired = try await h.request(
                "POST", "/stream-tickets", headers: ["Authorization": "Bearer \(Self.jwt("late", expiresIn: -60))"])
            #expect(expired.status == 401)
            #expect(expired.text.contains("expired"), "\(expired.text)")

            let tampered = try await h.get(
                "/subscribe/conformance:whoami?ticket=AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
            #expect(tampered.status == 401)
            #expect(tampered.errorCode == "Unauthenticated")
            #expect(tampered.text.contains("another ticket key"), "\(tampered.text)")
            let garbage = try await h.get("/subscribe/conformance:whoami?ticket=%21%21")
            #expect(garbage.status == 401)
            #expect(garbage.text.contains("Malformed stream ticket"), "\(garbage.text)")

            let badCookie = try await h.get(
                "/query/conformance:whoami", headers: ["Cookie": "\(Self.cookie)=\"bad\u{7F}token\""])
            #expect(badCookie.status == 401)
            #expect(badCookie.errorCode == "Unauthenticated")
            let badHeader = try await h.get("/query/conformance:whoami", headers: ["Authorization": "Bearer bad\u{7F}"])
            #expect(badHeader.status == badCookie.status)
            #expect(badHeader.errorCode == badCookie.errorCode)
            // A token the deployment refuses is refused through the cookie exactly as through the header.
            let expiredCookie = try await h.get(
                "/subscribe/conformance:whoami",
                headers: ["Cookie": "\(Self.cookie)=\(Self.jwt("gone", expiresIn: -60))"])
            #expect(expiredCookie.status == 401, "\(expiredCookie.text)")
        }
    }

    @Test("a stream opened with a ticket ends with an Unauthenticated error when its token expires")
    func ticketStreamEndsAtTokenExpiry() async throws {
        // The gateway and the deployment share a test clock: the test moves it past the token's `exp`.
        let clock = TestClock<Duration>()
        let time = GatewayClock(clock)
        try await TestGateway.run(.inProcess, clock: time) { h in
            let token = Self.jwt("brief", expiresIn: 60, now: time.wallSeconds)
            let minted = try await h.request("POST", "/stream-tickets", headers: ["Authorization": "Bearer \(token)"])
            let ticket = try Self.ticket(from: minted)
            let stream = try await h.openStream("/subscribe/conformance:whoami?ticket=\(ticket)")
            defer { stream.close() }
            #expect(try await Self.firstIdentity(stream).contains("brief"))
            let error = try #require(
                try await clock.advance(by: .seconds(61), until: { try await stream.nextEventAsync() }),
                "an error event before the end")
            #expect(error.event == "fatal")
            #expect(error.data.contains("Unauthenticated"), "\(error.data)")
            #expect(try await stream.nextEventAsync() == nil, "the stream ends after the error")
            let again = try await h.get("/subscribe/conformance:whoami?ticket=\(ticket)")
            #expect(again.status == 401, "the ticket expired with its token")
        }
    }

    @Test("a page's preflight for POST /stream-tickets with Authorization is allowed")
    func preflightAllowsTicketRequests() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.access.cors = CORSPolicy(origins: ["https://app.test"], allowCredentials: true)
                $0.access.authCookie = Self.cookie
            }
        ) { h in
            let preflight = try await h.request(
                "OPTIONS", "/stream-tickets",
                headers: [
                    "Origin": "https://app.test", "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization",
                ])
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Methods")?.contains("POST") == true)
            #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Authorization") == true)
            #expect(preflight.header("Access-Control-Allow-Credentials") == "true")
            #expect(preflight.header("Access-Control-Allow-Origin") == "https://app.test")

            let minted = try await h.request(
                "POST", "/stream-tickets",
                headers: ["Origin": "https://app.test", "Cookie": "\(Self.cookie)=\(Self.jwt("cors-ada"))"])
            #expect(minted.header("Access-Control-Allow-Origin") == "https://app.test")
            let stream = try await h.openStream(
                "/subscribe/conformance:whoami?ticket=\(try Self.ticket(from: minted))",
                headers: ["Origin": "https://app.test"])
            defer { stream.close() }
            #expect(try await Self.firstIdentity(stream).contains("cors-ada"))
            #expect(stream.head.header("Access-Control-Allow-Credentials") == "true")
        }
    }

    @Test("a ticket from one gateway process opens a stream on another with the same key, not on one with another key")
    func ticketsTravelBetweenReplicas() async throws {
        let sharedKey = try StreamTicketTests.temporaryFile(UUID().uuidString + UUID().uuidString + "\n")
        let otherKey = try StreamTicketTests.temporaryFile(UUID().uuidString + UUID().uuidString + "\n")
        defer { for file in [sharedKey, otherKey] { try? FileManager.default.removeItem(at: file) } }
        let token = Self.jwt("replica-ada")
        let cookieToken = Self.jwt("replica-cookie")
        let environment = [
            "GATEWAY_TICKET_KEY_FILE": sharedKey.path, "GATEWAY_AUTH_COOKIE": Self.cookie, "LOG_LEVEL": "trace",
        ]
        var logs: [String] = []

        let (ticket, firstLog) = try await TestGateway.run(.process, environment: environment) { gateway in
            let minted = try await blocking {
                try RawConnection.request(
                    "POST", "/stream-tickets", port: gateway.port, headers: ["Authorization": "Bearer \(token)"])
            }
            let ticket = try Self.ticket(from: minted)
            // The issuing process opens its own ticket, and reads the cookie.
            let own = try await blocking {
                try EventStreamReader(port: gateway.port, target: "/subscribe/conformance:whoami?ticket=\(ticket)")
            }
            defer { own.close() }
            #expect(try await Self.firstIdentity(own).contains("replica-ada"))
            let byCookie = try await blocking {
                try EventStreamReader(
                    port: gateway.port, target: "/subscribe/conformance:whoami",
                    headers: ["Cookie": "\(Self.cookie)=\(cookieToken)"])
            }
            defer { byCookie.close() }
            #expect(try await Self.firstIdentity(byCookie).contains("replica-cookie"))
            let refused = try await blocking {
                try RawConnection.request(
                    "GET", "/subscribe/conformance:whoami?ticket=\(ticket.dropLast())x", port: gateway.port)
            }
            #expect(refused.status == 401)
            return (ticket, gateway.log)
        }
        logs.append(firstLog)

        // The first process is gone: the ticket alone carries the user to a replica holding the same key.
        logs.append(
            try await TestGateway.run(.process, environment: environment) { gateway in
                let stream = try await blocking {
                    try EventStreamReader(port: gateway.port, target: "/subscribe/conformance:whoami?ticket=\(ticket)")
                }
                defer { stream.close() }
                #expect(try await Self.firstIdentity(stream).contains("replica-ada"))
                return gateway.log
            })

        var foreignEnvironment = environment
        foreignEnvironment["GATEWAY_TICKET_KEY_FILE"] = otherKey.path
        logs.append(
            try await TestGateway.run(.process, environment: foreignEnvironment) { gateway in
                let refused = try await blocking {
                    try RawConnection.request(
                        "GET", "/subscribe/conformance:whoami?ticket=\(ticket)", port: gateway.port)
                }
                #expect(refused.status == 401)
                #expect(refused.errorCode == "Unauthenticated")
                return gateway.log
            })

        var secrets: [String] = [token, cookieToken, ticket, String(ticket.prefix(24))]
        for part in (token + "." + cookieToken).split(separator: ".") where part.count > 8 {
            secrets.append(String(part))
        }
        for log in logs {
            #expect(log.contains("trace") || log.contains("debug"), "the gateway logged at trace level")
            for secret in secrets {
                #expect(!log.contains(secret), "a credential reached the log")
            }
        }
    }

    @Test("a ticket key file shorter than 32 bytes stops the gateway with a message naming the setting")
    func shortKeyFileIsRefused() async throws {
        let file = try StreamTicketTests.temporaryFile("too-short-secret\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await ChildProcess.run(
            try GatewayProcess.binaryPath(), arguments: ["--ticket-key-file", file.path, "--port", "0"],
            environment: GatewayProcess.inheritedEnvironment, timeout: .seconds(60))
        let text = run.stderr
        #expect(run.status == 64)
        #expect(text.contains("--ticket-key-file/GATEWAY_TICKET_KEY_FILE"), "\(text)")
        #expect(text.contains("at least 32"), "\(text)")
        #expect(!text.contains("too-short-secret"))
    }
}
