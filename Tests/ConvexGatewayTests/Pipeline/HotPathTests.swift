import Clocks
import ConvexSyncProtocol
import ConvexValues
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// The hot `GET` path (Pipeline/HotPath.swift): a remembered target answers with a prepared response, and must give
/// exactly what full handling would, for every caller.
@Suite(.timeLimit(.minutes(5)))
struct HotPathTests {
    /// An unsigned JWT, which the local deployment accepts.
    static func jwt(subject: String) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"none"}"#) + "." + part(#"{"sub":"\#(subject)","iss":"https://issuer.test"}"#) + ".sig"
    }

    /// GETs `target` until full handling has answered it from a live subscription, which remembers it.
    static func warm(_ h: GatewayHarness, _ target: String, headers: [String: String] = [:]) async throws
        -> TestResponse
    {
        var response: TestResponse?
        let remembered = await eventually {
            response = try? await h.get(target, headers: headers)
            return h.gateway.core.hotPath.targets.route(for: target) != nil
        }
        #expect(remembered, "\(target) was not remembered")
        return try #require(response)
    }

    @Test func aRememberedTargetFollowsEveryChange() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/messages:list?channel=hot"
            let first = try await Self.warm(h, target)
            #expect(first.status == 200)
            #expect(first.text == "[]")
            let hot = try await h.get(target)
            #expect(hot.status == 200)
            #expect(hot.text == "[]")
            #expect(hot.header("Content-Type") == "application/json")
            #expect(hot.header("ETag") == first.header("ETag"))

            for n in 1...3 {
                let sent = try await h.post("/mutation/messages:send", json: #"{"body":"m\#(n)","channel":"hot"}"#)
                #expect(sent.status == 200)
                let seen = Box<TestResponse?>(nil)
                let updated = await eventually {
                    let port = h.port
                    guard let response = try? await blocking({ try RawConnection.request("GET", target, port: port) })
                    else { return false }
                    seen.set(response)
                    return response.text.contains(#""body":"m\#(n)""#)
                }
                #expect(updated, "GET never showed message \(n)")
                // Full handling of the same query under another target agrees byte for byte.
                let full = try await h.get("/query/messages:list?format=plain&channel=hot")
                if let latest = seen.value, full.header("ETag") == latest.header("ETag") {
                    #expect(full.body == latest.body)
                }
                #expect(seen.value?.header("ETag") != first.header("ETag"))
            }
        }
    }

    @Test func aRememberedTargetNeverAnswersForAnotherCaller() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/conformance:whoami"
            let anonymous = try await Self.warm(h, target)
            #expect(anonymous.text.contains(#""identity":null"#))

            let user = try await h.get(target, headers: ["Authorization": "Bearer \(Self.jwt(subject: "ann"))"])
            #expect(user.status == 200)
            #expect(user.text.contains("ann"), "got \(user.text)")
            let lowerCase = try await h.get(target, headers: ["authorization": "Bearer \(Self.jwt(subject: "bo"))"])
            #expect(lowerCase.text.contains("bo"), "got \(lowerCase.text)")
            let malformed = try await h.get(target, headers: ["Authorization": "Basic abc"])
            #expect(malformed.status == 401)

            #expect(try await h.get(target).text == anonymous.text)
        }
    }

    @Test func anEventStreamRequestOnARememberedTargetStillStreams() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/messages:list?channel=hot-sse"
            _ = try await Self.warm(h, target)
            let stream = try await h.openStream(target)
            defer { stream.close() }
            #expect(stream.head.status == 200)
            #expect(stream.head.header("Content-Type") == "text/event-stream")
            let event = try #require(try await stream.nextEventAsync())
            #expect(event.data == "[]")
        }
    }

    @Test func accessControlsStillApplyToARememberedTarget() async throws {
        let key = try Secret("hot-key-0123456789", source: "test")
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.access.apiKey = key
                $0.access.cors = CORSPolicy(origins: ["https://app.test"])
            }
        ) { h in
            let target = "/query/messages:list?channel=hot-access"
            let ok = try await Self.warm(h, target, headers: ["X-API-Key": "hot-key-0123456789"])
            #expect(ok.status == 200)
            #expect(try await h.get(target, headers: ["x-api-key": "hot-key-0123456789"]).status == 200)
            let missing = try await h.get(target)
            #expect(missing.status == 401)
            #expect(missing.errorCode == "InvalidAPIKey")
            let wrong = try await h.get(target, headers: ["X-API-Key": "hot-key-0123456788"])
            #expect(wrong.status == 401)

            let remembered = try #require(h.gateway.core.hotPath.targets.route(for: target))
            let origin = try await h.get(
                target, headers: ["X-API-Key": "hot-key-0123456789", "Origin": "https://app.test"])
            #expect(origin.status == 200)
            #expect(origin.header("Access-Control-Allow-Origin") == "https://app.test")
            // Full handling of a declined request keeps what is remembered.
            #expect(h.gateway.core.hotPath.targets.route(for: target) === remembered)
            let foreign = try await h.get(
                target, headers: ["X-API-Key": "hot-key-0123456789", "Origin": "https://evil.test"])
            #expect(foreign.status == 403)
        }
    }

    /// A keep-alive connection keeps its last lookup (HotPath.Targets.ConnectionRouteCache); it must give way when the target is
    /// remembered anew.
    @Test func aKeepAliveConnectionFollowsATargetRememberedAnew() async throws {
        // Keep-warm expiry on a test clock, moved on when the test wants the subscription gone (on the real clock, a
        // busy machine could expire it between any two steps). The keep-alive connection waits, idle, while the
        // subscription expires and a mutation goes through another connection: on a loaded machine that took longer
        // than the default 30 s idle timeout, which closed it ("connection closed while reading a line"), so this
        // gateway closes no idle connection.
        let clock = TestClock<Duration>()
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.keepWarm = .milliseconds(200)
                $0.access.idleTimeoutSeconds = 0
            }, clock: GatewayClock(clock)
        ) { h in
            let target = "/query/messages:list?channel=hot-memo"
            _ = try await Self.warm(h, target)
            let port = h.port
            let connection = try RawConnection(port: port)
            let request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            let first = try await blocking {
                try connection.send(request)
                return try connection.readResponse()
            }
            #expect(first.text == "[]")
            let remembered = try #require(h.gateway.core.hotPath.targets.route(for: target))
            let hub = h.gateway.core.hub
            await clock.advance(by: .seconds(1))
            // The sweeper may not have slept again by the time the clock moved (a busy machine): sweep once more at
            // the new time, as its next tick would.
            hub.sweep()
            #expect(await eventually { hub.subscriptionCount == 0 }, "the subscription never expired")

            _ = try await h.post("/mutation/messages:send", json: #"{"body":"later","channel":"hot-memo"}"#)
            for _ in 0..<3 {
                let response = try await blocking {
                    try connection.send(request)
                    return try connection.readResponse()
                }
                #expect(response.status == 200)
                #expect(response.text.contains("later"), "got \(response.text)")
            }
            let renewed = try #require(h.gateway.core.hotPath.targets.route(for: target))
            #expect(renewed !== remembered)
            // The same connection's next change is seen too, once the renewed subscription has it.
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"again","channel":"hot-memo"}"#)
            #expect(
                await eventually {
                    let text = try? await blocking {
                        try connection.send(request)
                        return try connection.readResponse().text
                    }
                    return text?.contains("again") == true
                })
        }
    }

    @Test func anExpiredSubscriptionIsForgottenAndTheTargetStillAnswers() async throws {
        // Keep-warm on a test clock: the subscription lives until the test moves the clock past it, however slowly the
        // requests that warm it come (on the real clock, a busy machine expired it between the warming GETs).
        let clock = TestClock<Duration>()
        try await TestGateway.run(.inProcess, configure: { $0.keepWarm = .seconds(10) }, clock: GatewayClock(clock)) {
            h in
            let target = "/query/messages:list?channel=hot-expiry"
            _ = try await Self.warm(h, target)
            let remembered = try #require(h.gateway.core.hotPath.targets.route(for: target))
            let hub = h.gateway.core.hub
            await clock.advance(by: .seconds(11))
            // The sweeper may not have slept again by the time the clock moved (a busy machine): sweep once at the new
            // time, as its next tick would.
            hub.sweep()
            #expect(await eventually { hub.subscriptionCount == 0 }, "the subscription never expired")
            #expect(remembered.live.version == nil)

            _ = try await h.post("/mutation/messages:send", json: #"{"body":"later","channel":"hot-expiry"}"#)
            let again = try await h.get(target)
            #expect(again.status == 200)
            #expect(again.text.contains("later"), "got \(again.text)")
            #expect(h.gateway.core.hotPath.targets.route(for: target) !== remembered)
        }
    }

    @Test func hotAnswersAreCountedInTheMetrics() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/mlb:first_place_team?division=AL%20West"
            _ = try await Self.warm(h, target)
            let before = try await Self.queryCount(h)
            for _ in 0..<5 { #expect(try await h.get(target).status == 200) }
            #expect(try await Self.queryCount(h) == before + 5)
        }
    }

    static func queryCount(_ h: GatewayHarness) async throws -> Int {
        let metrics = try await h.get("/metrics").text
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("convex_gateway_http_server_requests_total") && $0.contains(#"route="/query/{function}""#)
                && $0.contains(#"status="200""#)
        }
        return Int(line?.split(separator: " ").last ?? "") ?? 0
    }

    @Test func rememberedTargetsAreBounded() throws {
        let hot = HotPath.Targets(metrics: GatewayMetrics(), authCookie: nil)
        let key = SubscriptionHub.Key(identity: "", function: try UdfPath(parsing: "m:f"), args: [:])
        var retired: [LiveResult] = []
        for i in 0..<HotPath.Targets.capacity {
            let live = LiveResult()
            live.advance(to: 1)
            if i % 2 == 0 { retired.append(live) }
            hot.remember(.init(key: key, format: .plain, live: live, specFetchCount: 0), for: "/query/m:f?i=\(i)")
        }
        #expect(hot.count == HotPath.Targets.capacity)
        for live in retired { live.retire() }
        let live = LiveResult()
        live.advance(to: 1)
        hot.remember(.init(key: key, format: .plain, live: live, specFetchCount: 0), for: "/query/m:f?next")
        #expect(hot.count == HotPath.Targets.capacity / 2 + 1)
        #expect(hot.route(for: "/query/m:f?i=0") == nil)
        #expect(hot.route(for: "/query/m:f?i=1") != nil)

        // Full of live subscriptions: everything is forgotten, then learnt again.
        for i in 0..<HotPath.Targets.capacity {
            hot.remember(.init(key: key, format: .plain, live: live, specFetchCount: 0), for: "/query/m:f?j=\(i)")
            #expect(hot.count <= HotPath.Targets.capacity)
        }
        #expect(hot.route(for: "/query/m:f?i=1") == nil)
        #expect(hot.route(for: "/query/m:f?j=\(HotPath.Targets.capacity - 1)") != nil)
    }
}

extension HotPath.Targets.CachedResponse {
    /// The variants prepared so far, described: coding, status and the access stage's headers.
    var variantKeys: [String] {
        variants.withLock { variants in
            variants.map { variant in
                (variant.gzip ? "gzip " : "identity ") + (variant.notModified ? "304" : "200")
                    + variant.accessHeaders.map { "\n\($0.0): \($0.1)" }.joined()
            }
        }
    }
}
