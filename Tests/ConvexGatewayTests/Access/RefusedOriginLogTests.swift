import Testing

@testable import ConvexGateway

/// A page from another origin that cannot use the gateway is named in the log once, at `notice`, with the flag that
/// allows it: its browser shows the page only a generic CORS message.
@Suite struct RefusedOriginLogTests {
    typealias Recorder = UpstreamFailureLoggingTests.Recorder

    static func notices(_ recorder: Recorder) -> [String] {
        recorder.messages.withLock { $0 }.filter { $0.hasPrefix("notice ") }
    }

    @Test func aRefusedOriginIsNamedOnceWithTheFlag() throws {
        let recorder = Recorder()
        var configuration = AccessConfiguration()
        configuration.cors.origins = ["https://app.example"]
        let access = AccessControl(configuration: configuration, logger: recorder.logger)
        for _ in 0..<3 {
            let refused = access.answer(
                to: AccessControlTests.request("/query/a:b", headers: ["Origin": "https://other.example"]))
            #expect(refused?.status == 403)
        }
        _ = access.answer(to: AccessControlTests.request("/query/a:b", headers: ["Origin": "https://app.example"]))
        let notices = Self.notices(recorder)
        #expect(notices.count == 1, "\(notices)")
        #expect(notices.first?.contains("'https://other.example'") == true, "\(notices)")
        #expect(notices.first?.contains("--cors-origins") == true, "\(notices)")
        #expect(notices.first?.contains("OriginNotAllowed") == true, "\(notices)")
    }

    @Test func withCORSOffAPageOfAnotherOriginIsNamedAndTheGatewaysOwnIsNot() throws {
        let recorder = Recorder()
        let access = AccessControl(configuration: AccessConfiguration(), logger: recorder.logger)
        let own = ["Origin": "http://127.0.0.1:8080", "Host": "127.0.0.1:8080"]
        #expect(access.answer(to: AccessControlTests.request("/mutation/a:b", method: "POST", headers: own)) == nil)
        #expect(Self.notices(recorder).isEmpty, "the demo page's own posts: \(Self.notices(recorder))")

        let other = ["Origin": "http://localhost:8000", "Host": "127.0.0.1:8080"]
        for _ in 0..<2 {
            #expect(access.answer(to: AccessControlTests.request("/query/a:b", headers: other)) == nil)
        }
        let fromFile = ["Origin": "null", "Host": "127.0.0.1:8080"]
        _ = access.answer(to: AccessControlTests.request("/query/a:b", headers: fromFile))
        let notices = Self.notices(recorder)
        #expect(notices.count == 2, "\(notices)")
        #expect(notices.first?.contains("CORS is off; allow it with --cors-origins 'http://localhost:8000'") == true)
        #expect(notices.last?.contains("origin 'null'") == true, "\(notices)")
        #expect(notices.last?.contains("serve the page over HTTP") == true, "\(notices)")
    }

    @Test func madeUpOriginsCannotFillTheLog() {
        let recorder = Recorder()
        let log = RefusedOriginLog(logger: recorder.logger)
        for n in 0..<(RefusedOriginLog.limit + 50) { log.record("https://site\(n).example", corsEnabled: true) }
        let notices = Self.notices(recorder)
        #expect(notices.count == RefusedOriginLog.limit + 1)
        #expect(notices.last?.contains("further ones are not logged") == true, "\(notices.last ?? "")")
    }
}
