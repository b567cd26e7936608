import Clocks
import ConvexValues
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// The access controls and request limits through a real gateway on a real deployment.
@Suite(.timeLimit(.minutes(5)))
struct AccessEndToEndTests {
    /// Every `Vary` header of an answer.
    static func varies(_ response: TestResponse) -> [String] {
        response.head.headers.filter { $0.0.lowercased() == "vary" }.map(\.1)
    }

    @Test func answersSayTheyDependOnTheCallerAndASignedInCallersArePrivate() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.authCookie = "convex_jwt" }) { h in
            let token = HotPathTests.jwt(subject: "ann")
            let target = "/query/mlb:teams"
            let anonymous = try await h.get(target)
            #expect(anonymous.status == 200)
            #expect(Self.varies(anonymous).contains("Authorization, Cookie"))
            #expect(anonymous.header("Cache-Control") == nil, "an anonymous answer may be shared")
            // The hot path's answer of the same target says the same.
            let hot = try await HotPathTests.warm(h, target)
            #expect(h.gateway.core.hotPath.targets.route(for: target) != nil)
            let again = try await h.get(target)
            #expect(again.header("Cache-Control") == nil)
            #expect(Self.varies(again) == Self.varies(hot))
            #expect(Self.varies(again).contains("Authorization, Cookie"))

            for caller in [["Authorization": "Bearer \(token)"], ["Cookie": "convex_jwt=\(token)"]] {
                let signedIn = try await h.get(target, headers: caller)
                #expect(signedIn.status == 200, "\(caller)")
                #expect(signedIn.header("Cache-Control") == "private", "\(caller)")
                #expect(Self.varies(signedIn).contains("Authorization, Cookie"))
            }
            let mutation = try await h.post(
                "/mutation/messages:send", json: #"{"body":"x"}"#,
                headers: ["Content-Type": "application/json", "Authorization": "Bearer \(token)"])
            #expect(mutation.status == 200)
            #expect(mutation.header("Cache-Control") == "private")
            // A stream ticket keeps its own no-store; the gateway's own routes do not depend on the caller.
            let ticket = try await h.post("/stream-tickets", json: "", headers: ["Authorization": "Bearer \(token)"])
            #expect(ticket.status == 201)
            #expect(ticket.head.headers.filter { $0.0.lowercased() == "cache-control" }.map(\.1) == ["no-store"])
            let health = try await h.get("/healthz")
            #expect(Self.varies(health).isEmpty)
        }
    }

    @Test func apiKeyIsRequiredExceptOnProbesAndIsComparedExactly() async throws {
        let key = try Secret("gw-key-0123456789", source: "test")
        // The demo page on, to see that `/` needs no key either.
        let configure: (inout GatewayConfiguration) -> Void = {
            $0.access.apiKey = key
            $0.demoPage = true
        }
        try await TestGateway.run(.inProcess, configure: configure) { h in
            let missing = try await h.get("/query/messages:list")
            #expect(missing.status == 401)
            #expect(missing.errorCode == "InvalidAPIKey")
            #expect(missing.header("WWW-Authenticate") != nil)
            let wrong = try await h.get("/query/messages:list", headers: ["X-API-Key": "gw-key-0123456788"])
            #expect(wrong.status == 401)
            #expect(wrong.errorCode == "InvalidAPIKey")
            let metrics = try await h.get("/metrics")
            #expect(metrics.status == 401)
            let post = try await h.post("/mutation/messages:send", json: #"{"body":"x"}"#)
            #expect(post.status == 401)

            let ok = try await h.get("/query/messages:list", headers: ["X-API-Key": "gw-key-0123456789"])
            #expect(ok.status == 200)
            let okLower = try await h.get("/metrics", headers: ["x-api-key": "gw-key-0123456789"])
            #expect(okLower.status == 200)
            #expect(okLower.text.contains(#"status="401""#))
            for open in ["/healthz", "/readyz", "/client.js", "/"] {
                #expect(try await h.get(open).status == 200, "\(open)")
            }
            let stream = try await h.openStream(
                "/subscribe/messages:list?channel=key", headers: ["X-API-Key": "gw-key-0123456789"])
            defer { stream.close() }
            #expect(stream.head.status == 200)
            let refusedStream = try await h.get("/subscribe/messages:list?channel=key")
            #expect(refusedStream.status == 401)
        }
    }

    @Test func aDeniedFunctionAnswersExactlyAsAnUnknownOne() async throws {
        let deny = try FunctionPattern.list("messages:send,conformance:*")
        try await TestGateway.run(.inProcess, configure: { $0.access.functions.deny = deny }) { h in
            for (denied, unknown) in [("messages:send", "messages:sent"), ("conformance:add", "conformancf:add")] {
                for method in ["POST /mutation/", "POST /action/", "POST /query/", "GET /query/", "GET /subscribe/"] {
                    let parts = method.split(separator: " ")
                    let verb = String(parts[0])
                    let prefix = String(parts[1])
                    let body: String? = verb == "POST" ? #"{"body":"x"}"# : nil
                    let refused = try await h.request(verb, prefix + denied, body: body)
                    let missing = try await h.request(verb, prefix + unknown, body: body)
                    #expect(refused.status == 404, "\(method)\(denied)")
                    #expect(missing.status == 404, "\(method)\(unknown)")
                    #expect(
                        Self.withoutRequestID(refused.text)
                            == Self.withoutRequestID(missing.text.replacingOccurrences(of: unknown, with: denied)),
                        "\(method)")
                    #expect(refused.header("Content-Type") == missing.header("Content-Type"))
                    let refusedNames: [String] = refused.head.headers.map { $0.0 }.filter { $0 != "Date" }
                    let missingNames: [String] = missing.head.headers.map { $0.0 }.filter { $0 != "Date" }
                    #expect(refusedNames == missingNames)
                }
            }
            // Other functions are untouched.
            let list = try await h.get("/query/messages:list?channel=deny")
            #expect(list.status == 200)
            // Other errors still come first, as for an unknown function.
            let badFormat = try await h.get("/query/messages:send?format=xml")
            #expect(badFormat.status == 400)
        }
    }

    /// Error text with the deployment's per-request id blanked: `[Request ID: 5be9e612f73c7d9a]` → `[Request ID: *]`.
    static func withoutRequestID(_ text: String) -> String {
        guard let start = text.range(of: "[Request ID: "), let end = text[start.upperBound...].firstIndex(of: "]")
        else {
            return text
        }
        return text.replacingCharacters(in: start.upperBound..<end, with: "*")
    }

    @Test func anAllowlistRefusesEverythingElse() async throws {
        let allow = try FunctionPattern.list("messages:*")
        try await TestGateway.run(.inProcess, configure: { $0.access.functions.allow = allow }) { h in
            #expect(try await h.get("/query/messages:list").status == 200)
            let other = try await h.get("/query/mlb:first_place_team?division=AL%20East")
            #expect(other.status == 404)
            #expect(other.errorCode == "FunctionNotFound")
        }
    }

    @Test func corsForRestAndEventStreams() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.access.cors = CORSPolicy(origins: ["https://app.test"], allowCredentials: true, maxAgeSeconds: 120)
            }
        ) { h in
            let preflight = try await h.request(
                "OPTIONS", "/mutation/messages:send",
                headers: [
                    "Origin": "https://app.test", "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "content-type, x-api-key",
                ])
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Origin") == "https://app.test")
            #expect(preflight.header("Access-Control-Allow-Methods")?.contains("POST") == true)
            #expect(preflight.header("Access-Control-Allow-Headers")?.lowercased().contains("x-api-key") == true)
            #expect(preflight.header("Access-Control-Max-Age") == "120")
            #expect(preflight.header("Access-Control-Allow-Credentials") == "true")

            let get = try await h.get("/query/messages:list", headers: ["Origin": "https://app.test"])
            #expect(get.status == 200)
            #expect(get.header("Access-Control-Allow-Origin") == "https://app.test")
            #expect(get.header("Vary") == "Origin")
            #expect(get.header("Access-Control-Expose-Headers")?.contains("ETag") == true)
            let error = try await h.get("/query/nope:nothing", headers: ["Origin": "https://app.test"])
            #expect(error.status == 404)
            #expect(error.header("Access-Control-Allow-Origin") == "https://app.test")

            let stream = try await h.openStream(
                "/subscribe/messages:list?channel=cors", headers: ["Origin": "https://app.test"])
            defer { stream.close() }
            #expect(stream.head.status == 200)
            #expect(stream.head.header("Access-Control-Allow-Origin") == "https://app.test")
            #expect(stream.head.header("Access-Control-Allow-Credentials") == "true")
            _ = try #require(try await stream.nextEventAsync())

            let foreign = try await h.get("/query/messages:list", headers: ["Origin": "https://evil.test"])
            #expect(foreign.status == 403)
            #expect(foreign.errorCode == "OriginNotAllowed")
            #expect(foreign.header("Access-Control-Allow-Origin") == nil)
            let noOrigin = try await h.get("/query/messages:list")
            #expect(noOrigin.status == 200)
            #expect(noOrigin.header("Access-Control-Allow-Origin") == nil)
        }
    }

    /// An app embedding the gateway gets the check the settings make: `*` with credentials does not start.
    @Test func aWildcardOriginWithCredentialsDoesNotStart() throws {
        var configuration = GatewayConfiguration()
        configuration.port = 0
        configuration.threads = 1
        configuration.access.cors = CORSPolicy(origins: ["*"], allowCredentials: true)
        let gateway = Gateway(configuration: configuration, logger: quietLogger) { _, _ in ScriptedUpstream() }
        #expect(throws: CORSOriginError.self) { try gateway.start() }
        #expect(!gateway.isStarted)
    }

    @Test func optionsIs405WhenCORSIsOff() async throws {
        try await TestGateway.run(.inProcess) { h in
            let options = try await h.request(
                "OPTIONS", "/query/messages:list", headers: ["Origin": "https://app.test"])
            #expect(options.status == 405)
            #expect(options.header("Access-Control-Allow-Origin") == nil)
        }
    }

    @Test func rateLimitAnswers429WithRetryAfterPerClient() async throws {
        // The gateway's clock stands still: on the real one, a busy machine taking 5 s between the first GET and the
        // POST would refill a token (0.2 per second) and the POST would go through.
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.access.rateLimit = 0.2
                $0.access.rateLimitBurst = 3
            }, clock: GatewayClock(TestClock<Duration>())
        ) { h in
            for _ in 0..<3 {
                #expect(try await h.get("/query/messages:list?channel=rl").status == 200)
            }
            let limited = try await h.post("/mutation/messages:send", json: #"{"body":"x","channel":"rl"}"#)
            #expect(limited.status == 429)
            #expect(limited.errorCode == "RateLimited")
            let retryAfter = try #require(limited.header("Retry-After").flatMap { Int($0) })
            #expect(retryAfter >= 1 && retryAfter <= 5)
            // Probes and metrics are not rate limited.
            #expect(try await h.get("/healthz").status == 200)
            let metrics = try await h.get("/metrics")
            #expect(metrics.text.contains(#"status="429""#))
        }
    }

    @Test func oversizedHeadersAndURLsAreRefusedByTheMemoryPool() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.connectionMemoryLimit = 8192 }) { h in
            let port = h.port
            let header = try await blocking {
                try RawConnection.get(
                    "/healthz", port: port, headers: "X-Big: \(String(repeating: "a", count: 9000))\r\n")
            }
            #expect(header.status == 431)
            let url = try await blocking {
                try RawConnection.get("/query/messages:list?x=" + String(repeating: "b", count: 9000), port: port)
            }
            #expect(url.status == 414)
            // A request that fits still works.
            let fits = try await h.get("/healthz", headers: ["X-Small": String(repeating: "c", count: 2000)])
            #expect(fits.status == 200)
        }
    }

    @Test func theDefaultPoolAdmitsLargeHeadersAndBrowserSizedCookies() async throws {
        try await TestGateway.run(.inProcess) { h in
            // libmicrohttpd keeps a parsed copy of the Cookie header in the pool, so cookies get less room.
            for headers in [
                ["X-Client-Cert": String(repeating: "h", count: 10_000)],
                ["Cookie": "session=" + String(repeating: "c", count: 4_000)],
            ] {
                let get = try await h.get("/query/messages:list?channel=big-headers", headers: headers)
                #expect(get.status == 200, "\(headers.keys)")
                let stream = try await h.openStream("/subscribe/messages:list?channel=big-headers", headers: headers)
                defer { stream.close() }
                #expect(stream.head.status == 200, "\(headers.keys)")
                _ = try #require(try await stream.nextEventAsync())
            }
        }
    }

    @Test func aSlowSenderIsDisconnectedAfterTheIdleTimeout() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.idleTimeoutSeconds = 1 }) { h in
            let port = h.port
            // An open event stream is not idle-timed out: it goes idle first, so each slow sender the timeout closes
            // below was idle for less time than the stream.
            let stream = try await h.openStream("/subscribe/messages:list?channel=idle")
            defer { stream.close() }
            _ = try #require(try await stream.nextEventAsync())
            // Starts a request that never ends and waits for the idle timeout to close its connection.
            func slowSenderClosed() async throws -> (closed: Bool, after: Duration) {
                try await blocking {
                    let connection = try RawConnection(port: port, receiveTimeoutSeconds: 30)
                    defer { connection.close() }
                    try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                    // Real time: libmicrohttpd's connection timeout runs on its own real clock; the bound is generous.
                    let start = ContinuousClock.now
                    let closed = connection.waitForClose()
                    return (closed, ContinuousClock.now - start)
                }
            }
            let closed = try await slowSenderClosed()
            #expect(closed.closed)
            // Generous: on half a core the whole suite can hold libmicrohttpd's threads for seconds.
            #expect(closed.after < .seconds(30))
            // A second one, started once the first was closed: by the time the timeout closes it, the stream has been
            // idle for two timeouts, whichever libmicrohttpd thread serves it.
            #expect(try await slowSenderClosed().closed)
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"later","channel":"idle"}"#)
            let later = try #require(try await stream.nextEventAsync())
            #expect(later.data.contains("later"))
        }
    }
}
