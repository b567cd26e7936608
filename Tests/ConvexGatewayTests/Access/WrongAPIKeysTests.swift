import Clocks
import Testing

@testable import ConvexGateway

/// Wrong API keys are counted, named in the log once a minute per address (never the key), and an address that has
/// sent twenty in a minute is held back with 429 for the rest of it, the right key included, so that guessing the key
/// gets twenty tries a minute.
@Suite struct WrongAPIKeysTests {
    typealias Recorder = UpstreamFailureLoggingTests.Recorder

    static let key = "the-right-key-0123456789"

    static func keyed(_ key: String?, from address: String) -> GatewayRequest {
        AccessControlTests.request(
            "/mutation/a:b", method: "POST", headers: key.map { ["X-API-Key": $0] } ?? [:], remote: address)
    }

    @Test func wrongKeysAreCountedLoggedAndHeldBackPerAddress() async throws {
        let recorder = Recorder()
        let clock = TestClock<Duration>()
        var configuration = AccessConfiguration()
        configuration.apiKey = try Secret(Self.key, source: "test")
        let metrics = GatewayMetrics()
        let access = AccessControl(
            configuration: configuration, clock: GatewayClock(clock), metrics: metrics, logger: recorder.logger)
        for guess in 0..<WrongAPIKeys.allowedPerMinute {
            let answer = access.answer(to: Self.keyed("guess-\(guess)", from: "192.0.2.7"))
            #expect(answer?.status == 401, "guess \(guess)")
        }
        // Held back now, whatever key it sends; another address is not.
        let held = try #require(access.answer(to: Self.keyed("guess-again", from: "192.0.2.7")))
        #expect(held.status == 429)
        #expect(String(decoding: held.body, as: UTF8.self).contains(#""code":"RateLimited""#))
        #expect(access.answer(to: Self.keyed(Self.key, from: "192.0.2.7"))?.status == 429)
        #expect(access.answer(to: Self.keyed(Self.key, from: "192.0.2.8")) == nil)
        // A missing key is counted, never held against the address.
        for _ in 0..<30 { #expect(access.answer(to: Self.keyed(nil, from: "192.0.2.9"))?.status == 401) }
        #expect(access.answer(to: Self.keyed(Self.key, from: "192.0.2.9")) == nil)

        let warnings = recorder.messages.withLock { $0 }.filter { $0.hasPrefix("warning Wrong API keys") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.allSatisfy { !$0.contains("guess") && !$0.contains(Self.key) }, "a key reached the log")
        #expect(warnings.first?.contains("client.address=192.0.2.7") == true)
        let page = String(decoding: metrics.render(), as: UTF8.self)
        #expect(page.contains(#"convex_gateway_access_api_key_refusals_total{reason="wrong"} 20"#), "\(page)")
        #expect(page.contains(#"convex_gateway_access_api_key_refusals_total{reason="missing"} 30"#))

        // The next minute: tries again, and is named again when it guesses again.
        await clock.advance(by: .seconds(61))
        #expect(access.answer(to: Self.keyed(Self.key, from: "192.0.2.7")) == nil)
        #expect(access.answer(to: Self.keyed("guess-more", from: "192.0.2.7"))?.status == 401)
        let later = recorder.messages.withLock { $0 }.filter { $0.hasPrefix("warning Wrong API keys") }
        #expect(later.count == 2, "\(later)")
        // The line counts every wrong key since the last one: the nineteen of the first minute, and this one.
        #expect(later.last?.contains("wrong_keys=20") == true, "\(later)")
    }
}
