import Clocks
import CompressNIO
import ConvexValues
import Foundation
import HTTPFields
import NIOCore
import TestSupport
import Testing

@testable import ConvexGateway

/// `GET /query` as HTTP caches and long-pollers use it: `If-None-Match` → 304, `Accept-Encoding: gzip`, and the
/// long-poll of `If-None-Match` with `Prefer: wait` — on full handling and on the hot path alike.
@Suite(.timeLimit(.minutes(5)))
struct ConditionalGetTests {
    /// A signed-in caller's `GET` never takes the hot path: it shows what full handling answers.
    static let signedIn = ["Authorization": "Bearer \(HotPathTests.jwt(subject: "cond"))"]

    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        var buffer = ByteBuffer(bytes: bytes)
        return Array(try buffer.decompress(with: .gzip()).readableBytesView)
    }

    /// Sends a message big enough that the channel's list is above the gzip threshold.
    static func sendLong(_ h: GatewayHarness, channel: String, tag: String) async throws {
        let body = tag + String(repeating: "x", count: 1500)
        let sent = try await h.post("/mutation/messages:send", json: #"{"body":"\#(body)","channel":"\#(channel)"}"#)
        #expect(sent.status == 200)
    }

    @Test func aMatchingIfNoneMatchGets304OnTheHotAndTheFullPath() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/messages:list?channel=c304"
            let first = try await HotPathTests.warm(h, target)
            let etag = try #require(first.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("-plain\""), "got \(etag)")
            let before = try await Self.count(h, status: 304)

            for field in [etag, "W/\(etag)", #""nope", \#(etag)"#, "*"] {
                let hot = try await h.get(target, headers: ["If-None-Match": field])
                #expect(hot.status == 304, "If-None-Match: \(field)")
                #expect(hot.body.isEmpty)
                #expect(hot.header("Content-Length") == "\(first.body.count)", "the 200's length (RFC 9110 §8.6)")
                #expect(hot.header("ETag") == etag)
                #expect(hot.header("Content-Type") == nil)
            }
            #expect(try await Self.count(h, status: 304) == before + 4, "the hot 304s are counted")
            let variants =
                h.gateway.core.hotPath.targets.route(for: target)?.prepared.withLock { $0 }?.variantKeys ?? []
            #expect(variants.contains("identity 304"), "the hot path did not answer: \(variants)")

            // A signed-in caller has a subscription of its own, new here, holding the same value: the tag names the
            // value, whoever reads it.
            let signedIn = Self.signedIn.merging(["If-None-Match": etag]) { a, _ in a }
            for _ in 0..<2 {
                let full = try await h.get(target, headers: signedIn)
                #expect(full.status == 304)
                #expect(full.body.isEmpty)
                #expect(full.header("Content-Length") == "\(first.body.count)")
                #expect(full.header("ETag") == etag)
            }

            let head = try await h.request("HEAD", target, headers: ["If-None-Match": etag])
            #expect(head.status == 304)
            let stale = try await h.get(target, headers: ["If-None-Match": #""0000000000000000-plain""#])
            #expect(stale.status == 200)
            #expect(stale.body == first.body)
            let otherFormat = try await h.get(target + "&format=encoded", headers: ["If-None-Match": etag])
            #expect(otherFormat.status == 200, "another output mode is another representation")
            #expect(otherFormat.header("ETag") != etag)
        }
    }

    @Test func theETagOutlivesTheSubscription() async throws {
        // Keep-warm on a test clock: the subscription lives until the test moves the clock past it, however slowly the
        // requests that warm it come.
        let clock = TestClock<Duration>()
        try await TestGateway.run(.inProcess, configure: { $0.keepWarm = .seconds(10) }, clock: GatewayClock(clock)) {
            h in
            let target = "/query/messages:list?channel=c304-expiry"
            let first = try await HotPathTests.warm(h, target)
            let etag = try #require(first.header("ETag"))
            let hub = h.gateway.core.hub
            await clock.advance(by: .seconds(11))
            // The sweeper may not have slept again by the time the clock moved (a busy machine): sweep once at the new
            // time, as its next tick would.
            hub.sweep()
            #expect(await eventually { hub.subscriptionCount == 0 }, "the subscription never expired")
            let again = try await h.get(target, headers: ["If-None-Match": etag])
            #expect(again.status == 304, "a new subscription to the same value answers the same tag")
            #expect(again.header("ETag") == etag)
        }
    }

    @Test func bodiesFromOneKiBAreGzipCodedForClientsThatAcceptIt() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/messages:list?channel=gz"
            let small = try await h.get(target, headers: ["Accept-Encoding": "gzip"])
            #expect(small.header("Content-Encoding") == nil)
            #expect(!small.head.headers.contains { $0.0 == "Vary" && $0.1.contains("Accept-Encoding") })

            try await Self.sendLong(h, channel: "gz", tag: "first")
            let identity = try await Self.get(h, target + "&format=plain") { $0.text.contains("first") }
            #expect(identity.header("Content-Encoding") == nil)
            #expect(identity.header("Vary") == "Accept-Encoding")
            let etag = try #require(identity.header("ETag"))

            // Full handling (a signed-in caller), then the hot path (an anonymous target once remembered).
            let signedIn = Self.signedIn.merging(["Accept-Encoding": "br, gzip;q=0.5"]) { a, _ in a }
            let full = try await h.get(target + "&format=plain", headers: signedIn)
            _ = try await HotPathTests.warm(h, target + "&format=plain")
            let hot = try await h.get(target + "&format=plain", headers: ["Accept-Encoding": "gzip, deflate"])
            let variants =
                h.gateway.core.hotPath.targets.route(for: target + "&format=plain")?.prepared.withLock { $0 }?
                .variantKeys
            #expect(variants?.contains("gzip 200") == true, "the hot path did not answer: \(variants ?? [])")
            for response in [full, hot] {
                #expect(response.status == 200)
                #expect(response.header("Content-Encoding") == "gzip")
                #expect(response.header("Vary") == "Accept-Encoding")
                #expect(response.header("ETag") == EntityTag.gzipVariant(of: etag))
                #expect(response.body.count < identity.body.count)
                #expect(try Self.gunzip(response.body) == identity.body)
            }

            let refused = try await h.get(target + "&format=plain", headers: ["Accept-Encoding": "gzip;q=0, br"])
            #expect(refused.header("Content-Encoding") == nil)
            #expect(refused.body == identity.body)

            // Either tag matches the value; the 304 names the representation the client would get.
            for held in [etag, EntityTag.gzipVariant(of: etag)] {
                let unchanged = try await h.get(
                    target + "&format=plain", headers: ["Accept-Encoding": "gzip", "If-None-Match": held])
                #expect(unchanged.status == 304)
                #expect(unchanged.header("Content-Length") == "\(hot.body.count)", "the gzip-coded 200's length")
                #expect(unchanged.header("ETag") == EntityTag.gzipVariant(of: etag))
                #expect(unchanged.header("Vary") == "Accept-Encoding")
                let plain = try await h.get(target + "&format=plain", headers: ["If-None-Match": held])
                #expect(plain.status == 304)
                #expect(plain.header("Content-Length") == "\(identity.body.count)")
                #expect(plain.header("ETag") == etag)
            }

            let head = try await h.request("HEAD", target, headers: ["Accept-Encoding": "gzip"])
            #expect(head.header("Content-Encoding") == "gzip")
            #expect(head.header("ETag") == EntityTag.gzipVariant(of: etag))

            let stream = try await h.openStream(
                "/subscribe/messages:list?channel=gz", headers: ["Accept-Encoding": "gzip"])
            defer { stream.close() }
            #expect(stream.head.header("Content-Encoding") == nil, "event streams are never compressed")
            let event = try #require(try await stream.nextEventAsync())
            #expect(event.data.contains("first"))
        }
    }

    @Test func otherLargeAnswersAreGzipCodedToo() async throws {
        try await TestGateway.run(.inProcess) { h in
            let script = try await h.get("/client.js", headers: ["Accept-Encoding": "gzip"])
            #expect(script.header("Content-Encoding") == "gzip")
            #expect(try Self.gunzip(script.body) == (try await h.get("/client.js")).body)
            let etag = try #require(script.header("ETag"))
            #expect(etag.hasSuffix("-gzip\""))
            let unchanged = try await h.get("/client.js", headers: ["If-None-Match": etag])
            #expect(unchanged.status == 304, "the gzip variant's tag names the same script")

            let args = #"{"text":"\#(String(repeating: "y", count: 3000))"}"#
            let echoed = try await h.post(
                "/query/echo:echo", json: args,
                headers: ["Content-Type": "application/json", "Accept-Encoding": "gzip"])
            #expect(echoed.status == 200)
            #expect(echoed.header("Content-Encoding") == "gzip")
            #expect(String(decoding: try Self.gunzip(echoed.body), as: UTF8.self) == args)
        }
    }

    /// GETs `target` until `condition` holds of the answer (a change reaches the subscription shortly after the
    /// mutation that made it returns).
    static func get(
        _ h: GatewayHarness, _ target: String, headers: [String: String] = [:],
        until condition: @escaping @Sendable (TestResponse) -> Bool
    ) async throws -> TestResponse {
        var response: TestResponse?
        let shown = await eventually {
            response = try? await h.get(target, headers: headers)
            return response.map(condition) ?? false
        }
        #expect(shown, "\(target) never showed the change: \(response?.text ?? "no answer")")
        return try #require(response)
    }

    // MARK: Long-poll

    /// The `GET` of `target` holding the current value with `Prefer: wait=<wait>`, sent in the background.
    static func longPoll(
        _ h: GatewayHarness, _ target: String, etag: String, prefer: String, extra: [String: String] = [:]
    ) -> Task<TestResponse, any Error> {
        Task {
            try await h.get(target, headers: ["If-None-Match": etag, "Prefer": prefer].merging(extra) { a, _ in a })
        }
    }

    @Test func aWaitingGetAnswersTheChange() async throws {
        let clock = TestClock<Duration>()
        try await TestGateway.run(.inProcess, clock: GatewayClock(clock)) { h in
            let target = "/query/messages:list?channel=poll"
            let first = try await HotPathTests.warm(h, target)
            let etag = try #require(first.header("ETag"))
            let hub = h.gateway.core.hub
            let poll = Self.longPoll(h, target, etag: etag, prefer: "wait=20")
            #expect(await eventually { hub.attachmentCount == 1 }, "the GET never waited")

            try await Self.sendLong(h, channel: "poll", tag: "news")
            let answer = try await poll.value
            #expect(answer.status == 200)
            #expect(answer.text.contains("news"))
            #expect(answer.header("Preference-Applied") == "wait=20")
            let newTag = try #require(answer.header("ETag"))
            #expect(newTag != etag)
            #expect(answer.header("Vary") == "Accept-Encoding")
            #expect(hub.attachmentCount == 0)

            // Waiting on the new value, gzip accepted: the change arrives gzip-coded.
            let next = Self.longPoll(h, target, etag: newTag, prefer: "wait=20", extra: ["Accept-Encoding": "gzip"])
            #expect(await eventually { hub.attachmentCount == 1 }, "the second GET never waited")
            try await Self.sendLong(h, channel: "poll", tag: "later")
            let coded = try await next.value
            #expect(coded.status == 200)
            #expect(coded.header("Content-Encoding") == "gzip")
            #expect(String(decoding: try Self.gunzip(coded.body), as: UTF8.self).contains("later"))
        }
    }

    @Test func aWaitEndsWith304AfterTheWaitBoundedByTheSetting() async throws {
        let clock = TestClock<Duration>()
        try await TestGateway.run(.inProcess, configure: { $0.maxWaitSeconds = 7 }, clock: GatewayClock(clock)) { h in
            let target = "/query/messages:list?channel=poll-timeout"
            let etag = try #require(try await HotPathTests.warm(h, target).header("ETag"))
            let hub = h.gateway.core.hub
            let poll = Self.longPoll(h, target, etag: "W/\(etag)", prefer: "respond-async, wait=100")
            #expect(await eventually { hub.attachmentCount == 1 }, "the GET never waited")
            await clock.advance(by: .seconds(6))
            #expect(hub.attachmentCount == 1, "answered before its wait")
            await clock.advance(by: .seconds(1))
            let answer = try await poll.value
            #expect(answer.status == 304)
            #expect(answer.header("ETag") == etag)
            #expect(answer.header("Preference-Applied") == "wait=7")
            #expect(hub.attachmentCount == 0)
        }
    }

    @Test func withoutAMatchingTagOrAReadableWaitTheAnswerComesAtOnce() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/query/messages:list?channel=poll-now"
            let first = try await HotPathTests.warm(h, target)
            let etag = try #require(first.header("ETag"))
            let fresh = try await h.get(target, headers: ["Prefer": "wait=30"])
            #expect(fresh.status == 200)
            #expect(fresh.header("Preference-Applied") == nil)
            let stale = try await h.get(target, headers: ["If-None-Match": #""1-plain""#, "Prefer": "wait=30"])
            #expect(stale.status == 200)
            #expect(stale.body == first.body)
            for prefer in ["wait=soon", "wait=-5", "wait=0", "wait"] {
                let unread = try await h.get(target, headers: ["If-None-Match": etag, "Prefer": prefer])
                #expect(unread.status == 304, "Prefer: \(prefer) is ignored, not an error")
                #expect(unread.header("Preference-Applied") == nil)
            }
        }
    }

    @Test func waitingIsOffAtZero() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.maxWaitSeconds = 0 }) { h in
            let target = "/query/messages:list?channel=poll-off"
            let etag = try #require(try await HotPathTests.warm(h, target).header("ETag"))
            let answer = try await h.get(target, headers: ["If-None-Match": etag, "Prefer": "wait=30"])
            #expect(answer.status == 304)
            #expect(answer.header("Preference-Applied") == nil)
        }
    }

    @Test func aClientThatLeavesReleasesItsWaitWhenTheWaitEnds() async throws {
        let clock = TestClock<Duration>()
        try await TestGateway.run(.inProcess, clock: GatewayClock(clock)) { h in
            let target = "/query/messages:list?channel=poll-leave"
            let etag = try #require(try await HotPathTests.warm(h, target).header("ETag"))
            let hub = h.gateway.core.hub
            let connection = try RawConnection(port: h.port)
            try await blocking {
                try connection.send(
                    "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: \(etag)\r\nPrefer: wait=10\r\n\r\n")
            }
            #expect(await eventually { hub.attachmentCount == 1 }, "the GET never waited")
            connection.close()
            await clock.advance(by: .seconds(10))
            #expect(await eventually { hub.attachmentCount == 0 }, "the wait outlived its bound")
            #expect(try await h.get(target).status == 200, "the gateway still answers")
        }
    }

    @Test func shutdownEndsAWait() async throws {
        let clock = TestClock<Duration>()
        try await TestGateway.run(.inProcess, clock: GatewayClock(clock)) { h in
            let target = "/query/messages:list?channel=poll-shutdown"
            let etag = try #require(try await HotPathTests.warm(h, target).header("ETag"))
            let hub = h.gateway.core.hub
            let poll = Self.longPoll(h, target, etag: etag, prefer: "wait=30")
            #expect(await eventually { hub.attachmentCount == 1 }, "the GET never waited")
            await h.gateway.shutdown()
            let answer = try await poll.value
            #expect(answer.status == 503)
            #expect(answer.errorCode == "ShuttingDown")
            #expect(hub.attachmentCount == 0)
        }
    }

    static func count(_ h: GatewayHarness, status: Int) async throws -> Int {
        let metrics = try await h.get("/metrics").text
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("convex_gateway_http_server_requests_total") && $0.contains(#"route="/query/{function}""#)
                && $0.contains(#"status="\#(status)""#)
        }
        return Int(line?.split(separator: " ").last ?? "") ?? 0
    }
}
