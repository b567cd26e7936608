import ConvexGateway
import ConvexLocal
import ConvexValues
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// The request pipeline end to end, on the defects it was built to fix.
@Suite("Request pipeline", .timeLimit(.minutes(5)))
struct PipelineTests {
    static let adminKey = "pipeline-test-admin-key"

    @Test("a numeric-looking query-string value reaches a v.string() argument as the text sent")
    func stringArgumentsKeepTheirText() async throws {
        let functions = FunctionRegistry()
        functions.query("zips:echo", args: ["zip": .string, "count": .float64, "exact": .int64]) { _, args in
            .object(args)
        }
        try await TestGateway.run(.inProcess, adminKey: Self.adminKey, functions: functions) { h in
            let division = try await h.get("/query/mlb:first_place_team?division=12345")
            #expect(division.status == 200, "\(division.text)")
            #expect(division.text == "null")

            let echoed = try await h.get("/query/zips:echo?zip=02139&count=3&exact=9007199254740993&format=encoded")
            #expect(echoed.status == 200, "\(echoed.text)")
            #expect(echoed.text == #"{"count":3.0,"exact":{"$integer":"AQAAAAAAIAA="},"zip":"02139"}"#)
        }
    }

    @Test("without a function spec, query-string values are still guessed as JSON")
    func guessedWithoutSpec() async throws {
        try await TestGateway.run(.inProcess) { h in
            let refused = try await h.get("/query/mlb:first_place_team?division=12345")
            #expect(refused.status == 400)
            #expect(refused.errorCode == "ArgumentValidationError")
            let quoted = try await h.get("/query/mlb:first_place_team?division=%2212345%22")
            #expect(quoted.status == 200, "\(quoted.text)")
        }
    }

    @Test("a browser GET with an Origin under CORS is answered from the prepared response")
    func originTakesTheHotPath() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.access.cors = CORSPolicy(origins: ["https://app.test"]) })
        { h in
            let target = "/query/messages:list?channel=pipeline-cors"
            let browser = ["Origin": "https://app.test"]
            // The first GET subscribes; the second is answered from the subscription and remembers the target.
            _ = try await h.get(target, headers: browser)
            let first = try await h.get(target, headers: browser)
            #expect(first.status == 200)
            let remembered = try #require(h.gateway.core.hotPath.targets.route(for: target))
            let second = try await h.get(target, headers: browser)
            #expect(second.status == 200)
            #expect(second.header("Access-Control-Allow-Origin") == "https://app.test")
            #expect(second.header("ETag") == first.header("ETag"))
            #expect(second.body == first.body)
            let variants = remembered.prepared.withLock { $0 }?.variantKeys.sorted() ?? []
            #expect(variants.contains { $0.contains("Access-Control-Allow-Origin: https://app.test") }, "\(variants)")

            // Still the current value after a change, and still refused for a foreign origin.
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"new","channel":"pipeline-cors"}"#)
            var latest: TestResponse?
            let changed = await eventually {
                latest = try? await h.get(target, headers: browser)
                return latest?.text.contains("new") == true
            }
            #expect(changed, "\(latest?.text ?? "no answer")")
            #expect(latest?.header("Access-Control-Allow-Origin") == "https://app.test")
            let foreign = try await h.get(target, headers: ["Origin": "https://evil.test"])
            #expect(foreign.status == 403)
            #expect(foreign.errorCode == "OriginNotAllowed")
        }
    }

    @Test("the hot path counts requests against the rate limit like full handling")
    func rateLimitAppliesToHotAnswers() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.access.rateLimit = 0.001
                $0.access.rateLimitBurst = 3
            }
        ) { h in
            let target = "/query/messages:list?channel=pipeline-rate"
            #expect(try await h.get(target).status == 200)
            #expect(try await h.get(target).status == 200)
            #expect(h.gateway.core.hotPath.targets.route(for: target) != nil)
            #expect(try await h.get(target).status == 200)
            let limited = try await h.get(target)
            #expect(limited.status == 429)
            #expect(limited.errorCode == "RateLimited")
        }
    }

    @Test("the gateway's deadline is the upstream call's deadline, and the 504 names it")
    func oneDeadline() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: { $0.upstreamTimeout = .milliseconds(1500) },
            configureClient: { $0.callTimeout = .milliseconds(300) }
        ) { h in
            // Real time: the upstream client's call deadline and the gateway's run on the real clock here; the check is a lower bound (never answered before the deadline), which load cannot break.
            let started = ContinuousClock.now
            let slow = try await h.post("/action/conformance:sleep", json: #"{"ms": 4000}"#)
            let elapsed = ContinuousClock.now - started
            #expect(slow.status == 504, "\(slow.text)")
            #expect(slow.errorCode == "UpstreamTimeout")
            #expect(slow.text.contains("within 1.5 s"), "\(slow.text)")
            #expect(elapsed >= .milliseconds(1400), "answered after \(elapsed), before the gateway's deadline")
        }
    }
}
