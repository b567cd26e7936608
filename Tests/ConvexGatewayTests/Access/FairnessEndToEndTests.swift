import ConvexValues
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// The attacks of a client that fills the gateway's bounds first, each run as a hostile client would run it, with a
/// bystander answered while it runs (docs/configuration.md, "Limits and fairness").
@Suite(.timeLimit(.minutes(5)))
struct FairnessEndToEndTests {
    static let key = "fairness-key-0123456789"

    /// The head of a `POST` that declares `length` bytes of body and sends `sent` of them.
    static func upload(_ port: Int, path: String, length: Int, sent: Int, headers: String = "") throws
        -> RawConnection
    {
        let connection = try RawConnection(port: port, receiveTimeoutSeconds: 10)
        let head =
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\(headers)"
            + "Content-Length: \(length)\r\n\r\n"
        try? connection.send(Array(head.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: sent))
        return connection
    }

    /// Three uploads with no API key, declaring 16 MiB, 16 MiB and 1,990 bytes to an unknown path and trickling the
    /// rest, are refused from their heads: they hold none of the bound on bodies in flight, and a keyed caller's
    /// mutation is answered at once.
    @Test func tricklingUploadsWithoutTheKeyHoldNothing() async throws {
        let key = try Secret(Self.key, source: "test")
        try await TestGateway.run(.inProcess, configure: { $0.access.apiKey = key }) { h in
            let port = h.port
            let lengths = [16 << 20, 16 << 20, 1990]
            var uploads: [RawConnection] = []
            for length in lengths {
                // All but a few bytes of the small one; the large ones a first 64 KiB.
                let sent = min(length - 4, 64 * 1024)
                uploads.append(
                    try await blocking { try Self.upload(port, path: "/nowhere", length: length, sent: sent) })
            }
            for upload in uploads {
                // Answered from the head: 401, before the rest of the body is sent.
                let response = try await blocking { try upload.readResponse(method: "POST") }
                #expect(response.status == 401)
                #expect(response.errorCode == "InvalidAPIKey")
                #expect(response.header("Connection")?.lowercased() == "close")
            }
            #expect(h.gateway.bodyBytesInFlight == 0, "a refused upload holds body bytes")
            // Real time: a hang guard on the bystander's answer, generous; what it checks is that nothing it needs is held.
            let started = ContinuousClock.now
            let mutation = try await h.post(
                "/mutation/messages:send", json: #"{"body":"bystander"}"#,
                headers: ["Content-Type": "application/json", "X-API-Key": Self.key])
            #expect(mutation.status == 200, "\(mutation.text)")
            // Real time: a hang guard, not a timing target: the refused uploads kept nothing the mutation waits for.
            #expect(ContinuousClock.now - started < .seconds(10))
            for upload in uploads { upload.close() }
        }
    }

    /// The head decides the route, the method and the rate limit too, and counts a request against the rate limit
    /// once, whether it was admitted from its head or not.
    @Test func theHeadDecidesRouteMethodAndRateLimitOnce() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: {
                // Slow enough that no token comes back during the test.
                $0.access.rateLimit = 0.01
                $0.access.rateLimitBurst = 3
            }
        ) { h in
            let port = h.port
            // Not a function route: the rate limit does not count it.
            let unknown = try await blocking { try Self.upload(port, path: "/nowhere", length: 1 << 20, sent: 10) }
            let unknownAnswer = try await blocking { try unknown.readResponse(method: "POST") }
            #expect(unknownAnswer.status == 404)
            // A function route: counted (the first of the burst of 3), then refused for its method.
            let wrongMethod = try await blocking {
                try Self.upload(port, path: "/subscribe/messages:list", length: 1 << 20, sent: 10)
            }
            let wrongMethodAnswer = try await blocking { try wrongMethod.readResponse(method: "POST") }
            #expect(wrongMethodAnswer.status == 405)
            // The rest of the burst: each mutation counts once, from its head, not again when its body has come.
            for round in 0..<2 {
                let answer = try await h.post("/mutation/messages:send", json: #"{"body":"r\#(round)"}"#)
                #expect(answer.status == 200, "mutation \(round): \(answer.text)")
            }
            let limited = try await blocking {
                try Self.upload(port, path: "/mutation/messages:send", length: 1 << 20, sent: 10)
            }
            let limitedAnswer = try await blocking { try limited.readResponse(method: "POST") }
            #expect(limitedAnswer.status == 429)
            #expect(limitedAnswer.errorCode == "RateLimited")
            #expect(h.gateway.bodyBytesInFlight == 0)
        }
    }

    /// A JWT of `subject` the deployment without providers takes (any well-formed token that has not expired), or,
    /// with `expired`, one it refuses; `issued` tells two tokens of one user apart.
    static func token(subject: String, issued: Int = 1, expired: Bool = false) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let exp = expired ? 1000 : 4_000_000_000
        return part(#"{"alg":"none"}"#) + "."
            + part(#"{"sub":"\#(subject)","iss":"https://issuer.test","iat":\#(issued),"exp":\#(exp)}"#) + ".sig"
    }

    /// A `Host` that names another site (DNS rebinding) is refused on a gateway listening on loopback, and so is a
    /// request without `Host`; loopback names and `--allowed-hosts` are answered.
    @Test func aRebindingHostIsRefused() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.allowedHosts = ["gateway.internal"] }) { h in
            let port = h.port
            let target = "/query/mlb:teams"
            for host in ["evil.example", "evil.example:\(port)", "127.0.0.1.evil.example", "10.1.2.3"] {
                let refused = try await blocking {
                    try RawConnection.get(target, port: port, headers: "Host: \(host)\r\n", host: nil)
                }
                #expect(refused.status == 403, "Host \(host)")
                #expect(refused.errorCode == "HostNotAllowed", "Host \(host)")
            }
            for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "[::1]:\(port)", "gateway.internal"] {
                let answered = try await blocking {
                    try RawConnection.get(target, port: port, headers: "Host: \(host)\r\n", host: nil)
                }
                #expect(answered.status == 200, "Host \(host)")
            }
            // No Host at all, on every kind of route.
            for request in ["GET \(target) HTTP/1.1", "GET /healthz HTTP/1.1", "GET /healthz HTTP/1.0"] {
                let connection = try RawConnection(port: port)
                let answer = try await blocking {
                    try connection.send(request + "\r\nConnection: close\r\n\r\n")
                    return try connection.readResponse()
                }
                #expect(answer.status == 400, "\(request)")
                #expect(answer.errorCode == "MissingHost", "\(request)")
            }
            // A mutation with a rebinding Host, from its head.
            let posted = try await blocking {
                try RawConnection.request(
                    "POST", "/mutation/messages:send", port: port,
                    headers: ["Host": "evil.example", "Content-Type": "application/json"],
                    body: Array(#"{"body":"rebound"}"#.utf8), host: nil)
            }
            #expect(posted.status == 403)
            let messages = try await h.get("/query/messages:list")
            #expect(!messages.text.contains("rebound"))
        }
    }

    /// A simple cross-site `POST` (a `text/plain` fetch or a form, which no preflight asks about) is refused before it
    /// runs, with or without a signed-in caller; the gateway's own pages and the origins CORS allows are served.
    @Test func aCrossSiteTextPlainPostIsRefused() async throws {
        try await TestGateway.run(.inProcess) { h in
            let port = h.port
            let attack = try await h.post(
                "/mutation/messages:send", json: #"{"body":"forged"}"#,
                headers: ["Content-Type": "text/plain;charset=UTF-8", "Origin": "https://evil.example"])
            #expect(attack.status == 403)
            #expect(attack.errorCode == "CrossSiteRequest")
            let noOrigin = try await h.post(
                "/mutation/messages:send", json: #"{"body":"forged"}"#,
                headers: ["Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"])
            #expect(noOrigin.status == 403)
            #expect(!(try await h.get("/query/messages:list")).text.contains("forged"))
            // The gateway's own page, and a client that is not a browser.
            let own = try await blocking {
                // As a browser sends it: the page's origin, and a Host with the port.
                try RawConnection.request(
                    "POST", "/mutation/messages:send", port: port,
                    headers: ["Content-Type": "text/plain", "Origin": "http://127.0.0.1:\(port)"],
                    body: Array(#"{"body":"own"}"#.utf8), host: "127.0.0.1:\(port)")
            }
            #expect(own.status == 200, "\(own.text)")
            let curl = try await h.post("/mutation/messages:send", json: #"{"body":"curl"}"#)
            #expect(curl.status == 200)
            // A GET from another site reads nothing it could not read anyway: CORS hides the answer.
            #expect(try await h.get("/query/messages:list", headers: ["Origin": "https://evil.example"]).status == 200)
        }
        try await TestGateway.run(
            .inProcess, configure: { $0.access.cors = CORSPolicy(origins: ["https://app.example"]) }
        ) {
            h in
            let allowed = try await h.post(
                "/mutation/messages:send", json: #"{"body":"app"}"#,
                headers: ["Content-Type": "text/plain", "Origin": "https://app.example"])
            #expect(allowed.status == 200)
            let other = try await h.post(
                "/mutation/messages:send", json: #"{"body":"x"}"#,
                headers: ["Content-Type": "text/plain", "Origin": "https://evil.example"])
            #expect(other.head.status == 403)
        }
    }

    /// One address holds its share of the streams (a tenth of `--max-streams` by default) and no more; another
    /// user's stream opens while it does, and two tokens of one user share one share.
    @Test func oneAddressHoldsItsShareOfStreams() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.maxStreams = 50 }) { h in
            let target = "/subscribe/mlb:first_place_team?division=AL%20Central"
            var held: [EventStreamReader] = []
            for _ in 0..<5 {
                let stream = try await h.openStream(target)
                #expect(stream.head.status == 200)
                held.append(stream)
            }
            let refused = try await h.get(target, headers: ["Accept": "text/event-stream"])
            #expect(refused.status == 429)
            #expect(refused.errorCode == "TooManyStreams")
            #expect(refused.header("Retry-After") != nil)
            // Another user, from the same address: its own share.
            let other = try await h.openStream(
                target, headers: ["Authorization": "Bearer \(Self.token(subject: "bystander"))"])
            #expect(other.head.status == 200)
            other.close()
            // One user's two tokens: one share between them.
            var mine: [EventStreamReader] = []
            for issued in 0..<5 {
                let token = Self.token(subject: "greedy", issued: issued % 2)
                let stream = try await h.openStream(target, headers: ["Authorization": "Bearer \(token)"])
                #expect(stream.head.status == 200)
                mine.append(stream)
            }
            let sixth = try await h.get(
                target,
                headers: [
                    "Accept": "text/event-stream",
                    "Authorization": "Bearer \(Self.token(subject: "greedy", issued: 7))",
                ])
            #expect(sixth.status == 429)
            // A closed stream gives its place back.
            held.removeFirst().close()
            #expect(
                await eventually {
                    h.gateway.core.openStreams.held(by: .address("127.0.0.1")) == 4
                })
            let again = try await h.openStream(target)
            #expect(again.head.status == 200)
            again.close()
            for stream in held + mine { stream.close() }
        }
    }

    /// Tokens the deployment refuses free their places among the signed-in connections at once: after five refused
    /// tokens under `--max-identities 5`, a valid one is answered.
    @Test func refusedTokensFreeTheirIdentityPlaces() async throws {
        // Every caller of the test comes from one address: its share of the signed-in connections is all of them here
        // (callsLongPollsAndIdentitiesHaveAShareEach holds the share per address).
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.maxIdentities = 5
                $0.maxIdentitiesPerClient = 5
            }
        ) { h in
            for index in 0..<5 {
                let forged = Self.token(subject: "forged-\(index)", expired: true)
                let answer = try await h.post(
                    "/mutation/messages:send", json: #"{"body":"x"}"#,
                    headers: ["Content-Type": "application/json", "Authorization": "Bearer \(forged)"])
                #expect(answer.status == 401, "forged token \(index): \(answer.text)")
            }
            let valid = try await h.post(
                "/mutation/messages:send", json: #"{"body":"signed in"}"#,
                headers: ["Content-Type": "application/json", "Authorization": "Bearer \(Self.token(subject: "ann"))"])
            #expect(valid.status == 200, "\(valid.text)")
            let query = try await h.get(
                "/query/messages:list", headers: ["Authorization": "Bearer \(Self.token(subject: "bob"))"])
            #expect(query.status == 200, "\(query.text)")
        }
    }

    /// A client has its share of calls running (`--max-calls-per-client`), of waiting long-polls, and of signed-in
    /// connections per address; each is answered 429 naming its setting while another client is served.
    @Test func callsLongPollsAndIdentitiesHaveAShareEach() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.maxCallsPerClient = 2
                $0.maxStreams = 10  // a share of one stream, and of one waiting long-poll
                $0.maxIdentitiesPerClient = 3
            }
        ) { h in
            // Two slow actions run; a third from the same client is refused, another client's runs.
            async let first = h.post("/action/conformance:sleep", json: #"{"ms":8000}"#)
            async let second = h.post("/action/conformance:sleep", json: #"{"ms":8000}"#)
            #expect(await eventually { h.gateway.core.calls.running.count(.address("127.0.0.1")) == 2 })
            let third = try await h.post("/action/conformance:sleep", json: #"{"ms":1}"#)
            #expect(third.status == 429)
            #expect(third.errorCode == "TooManyCalls")
            let other = try await h.post(
                "/action/conformance:sleep", json: #"{"ms":1}"#,
                headers: [
                    "Content-Type": "application/json", "Authorization": "Bearer \(Self.token(subject: "other"))",
                ])
            #expect(other.status == 200, "\(other.text)")
            #expect(try await first.status == 200)
            #expect(try await second.status == 200)

            // One long-poll waits; a second from the same client is refused at once.
            let target = "/query/messages:list?channel=longpoll"
            let current = try await h.get(target)
            let etag = try #require(current.header("ETag"))
            let waiting = ["If-None-Match": etag, "Prefer": "wait=20"]
            async let held = h.get(target, headers: waiting)
            #expect(
                await eventually { h.gateway.core.queries.longPolls.count(.address("127.0.0.1")) == 1 })
            let refused = try await h.get(target, headers: waiting)
            #expect(refused.status == 429)
            #expect(refused.errorCode == "TooManyLongPolls")
            let sent = try await h.post("/mutation/messages:send", json: #"{"body":"wake","channel":"longpoll"}"#)
            #expect(sent.status == 200)
            #expect(try await held.status == 200)

            // Signed-in connections: three from this address ("other" above, and two more), the fourth user refused.
            for user in ["u1", "u2"] {
                let answer = try await h.get(
                    "/query/messages:list", headers: ["Authorization": "Bearer \(Self.token(subject: user))"])
                #expect(answer.status == 200, "\(user)")
            }
            let fourth = try await h.get(
                "/query/messages:list", headers: ["Authorization": "Bearer \(Self.token(subject: "u4"))"])
            #expect(fourth.status == 429)
            #expect(fourth.errorCode == "TooManyIdentities")
            // A user already connected is still served.
            let again = try await h.get(
                "/query/messages:list", headers: ["Authorization": "Bearer \(Self.token(subject: "u2"))"])
            #expect(again.status == 200)
        }
    }

    /// A batch refused by the subscription limit closes the subscriptions it made: with five places free, a batch of
    /// ten new queries is refused, and five others then fit.
    @Test func aRefusedBatchReleasesTheSubscriptionsItMade() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.maxSubscriptions = 5
                $0.maxSubscriptionsPerCaller = 5
            }
        ) { h in
            func batch(_ names: Range<Int>) -> String {
                "/query?"
                    + names.map { "q.q\($0)=echo:echo&args.q\($0)=%7B%22n%22%3A\($0)%7D" }.joined(separator: "&")
            }
            let refused = try await h.get(batch(0..<10))
            #expect(refused.status == 503, "\(refused.text)")
            #expect(
                await eventually { h.gateway.core.hub.subscriptionCount == 0 },
                "the refused batch kept its subscriptions")
            let fits = try await h.get(batch(10..<15))
            #expect(fits.status == 200, "\(fits.text)")
        }
    }

    /// Slow clients are ended by deadlines, and one address holds its share of the connections: a head trickled past
    /// `--header-timeout-seconds` and a body slower than 1 KiB per `--body-timeout-seconds` get 408 `RequestTimeout`
    /// and their connections close, the body's bytes given back; the connection over the share gets 429
    /// `TooManyConnections` at once; meanwhile a bystander's mutation is served.
    @Test func slowClientsAreEndedAndAnAddressHoldsItsShareOfConnections() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.headerTimeoutSeconds = 1
                $0.bodyTimeoutSeconds = 1
                $0.maxConnectionsPerClient = 6
            }
        ) { h in
            let port = h.port
            // A head that never ends, a line at a time.
            let trickler = try RawConnection(port: port, receiveTimeoutSeconds: 20)
            try await blocking { try trickler.send("POST /mutation/messages:send HTTP/1.1\r\n") }
            let lines = Task {
                for index in 0..<40 {
                    // Real time: the server's deadlines run on its own clock; a line every 200 ms keeps the
                    // connection from idling while its head takes longer than the deadline.
                    try? await Task.sleep(for: .milliseconds(200))
                    try? await blocking { try trickler.send("X-Line-\(index): a\r\n") }
                }
            }
            let headAnswer = try await blocking { try trickler.readResponse(method: "POST") }
            lines.cancel()
            #expect(headAnswer.status == 408)
            #expect(headAnswer.errorCode == "RequestTimeout")
            // A body that stalls after its first bytes.
            let upload = try await blocking {
                try Self.upload(port, path: "/mutation/messages:send", length: 100_000, sent: 500)
            }
            let bodyAnswer = try await blocking { try upload.readResponse(method: "POST") }
            #expect(bodyAnswer.status == 408)
            #expect(bodyAnswer.errorCode == "RequestTimeout")
            #expect(await eventually { h.gateway.bodyBytesInFlight == 0 })
        }
        // The share of connections, on a gateway whose head deadline outlasts the check: with the 1 s one above, a
        // test run slowed by load let the held connections time out (408, their places given back) before the
        // seventh was accepted, which then timed out too instead of being refused.
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.headerTimeoutSeconds = 60
                $0.maxConnectionsPerClient = 6
            }
        ) { h in
            let port = h.port
            // Six held open, the seventh answered 429 at once.
            var held: [RawConnection] = []
            for _ in 0..<6 { held.append(try RawConnection(port: port)) }
            let over = try RawConnection(port: port)
            let overAnswer = try await blocking { try over.readResponse() }
            #expect(overAnswer.status == 429)
            #expect(overAnswer.errorCode == "TooManyConnections")
            for connection in held { connection.close() }
            // A bystander, served (once the server has seen the closed connections go).
            #expect(
                await eventually {
                    (try? await h.post("/mutation/messages:send", json: #"{"body":"still served"}"#))?.status == 200
                })
        }
    }

    /// The actions running on one upstream connection stay under Convex's bound (past which it would close the
    /// connection every anonymous caller shares): one more gets 503 `Overloaded`, and a signed-in caller, on a
    /// connection of its own, is served.
    @Test func actionsOnOneUpstreamConnectionStayUnderConvexsBound() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.maxActionsPerConnection = 2 }) { h in
            async let first = h.post("/action/conformance:sleep", json: #"{"ms":8000}"#)
            async let second = h.post("/action/conformance:sleep", json: #"{"ms":8000}"#)
            #expect(await eventually { h.gateway.core.calls.actionsPerConnection.count("") == 2 })
            let third = try await h.post("/action/conformance:sleep", json: #"{"ms":1}"#)
            #expect(third.status == 503)
            #expect(third.errorCode == "Overloaded")
            #expect(third.header("Retry-After") == "1")
            // Mutations are not actions: served.
            #expect(try await h.post("/mutation/messages:send", json: #"{"body":"m"}"#).status == 200)
            let signedIn = try await h.post(
                "/action/conformance:sleep", json: #"{"ms":1}"#,
                headers: ["Content-Type": "application/json", "Authorization": "Bearer \(Self.token(subject: "own"))"])
            #expect(signedIn.status == 200, "\(signedIn.text)")
            #expect(try await first.status == 200)
            #expect(try await second.status == 200)
        }
    }
}
