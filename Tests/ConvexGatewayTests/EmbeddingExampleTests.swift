import ConvexGateway
import ConvexLocal
import Foundation
import Logging
import ServiceLifecycle
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The example of docs/configuration.md, "Embedding the gateway in a Swift app", with only the public API: the page
/// shows it as written here, and it compiles and serves.
@Suite(.timeLimit(.minutes(5))) struct EmbeddingExampleTests {
    static let page = "docs/configuration.md"

    /// The example as the page prints it. ``theDocumentedExampleServesAQuery()`` runs the same code, on port 0,
    /// against a local deployment, quietly, and ends it by the group's graceful shutdown (as SIGTERM would).
    static let documented = """
        import ConvexGateway
        import Logging
        import ServiceLifecycle

        let logger = Logger(label: "my-app.gateway")
        var configuration = GatewayConfiguration()
        configuration.port = 8080
        configuration.access.cors = CORSPolicy(origins: ["https://app.example.com"])
        let upstreams = try ClientUpstream.factory(deploymentUrl: "https://happy-otter-123.convex.cloud", logger: logger)
        let gateway = Gateway(configuration: configuration, logger: logger, upstreamFactory: upstreams)
        let services = ServiceGroup(
            configuration: .init(services: [gateway], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await services.run()  // serves until SIGTERM or SIGINT, then drains

        """

    @Test func thePageShowsTheExample() throws {
        let page = try String(contentsOf: GatewayProcess.packageRoot.appendingPathComponent(Self.page), encoding: .utf8)
        let shown = page.contains("```swift\n" + Self.documented + "```\n")
        #expect(
            shown, "\(Self.page) no longer shows the embedding example this test runs; update one to match the other")
    }

    @Test func theDocumentedExampleServesAQuery() async throws {
        try await withLocalDeployment(.init(port: 0)) { deployment in
            var logger = Logger(label: "my-app.gateway")
            logger.logLevel = .critical
            var configuration = GatewayConfiguration()
            configuration.port = 0
            configuration.access.cors = CORSPolicy(origins: ["https://app.example.com"])
            let upstreams = try ClientUpstream.factory(deploymentUrl: deployment.url, logger: logger)
            let gateway = Gateway(configuration: configuration, logger: logger, upstreamFactory: upstreams)
            let services = ServiceGroup(
                configuration: .init(services: [gateway], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            let running = Task { try await services.run() }
            #expect(await eventually { gateway.port != nil }, "the group started the gateway")
            let port = try #require(gateway.port)
            let url = try #require(
                URL(string: "http://127.0.0.1:\(port)/query/mlb:first_place_team?division=NL%20West"))
            // The example keeps the default 5 s connect deadline, which a machine busy with the whole suite can miss
            // once (a 503 UpstreamUnavailable); the gateway connects again for the next request.
            var answer = ""
            let answered = await eventually(timeout: .seconds(60)) {
                guard let (data, _) = try? await URLSession.shared.data(from: url) else { return false }
                answer = String(decoding: data, as: UTF8.self)
                return answer.contains("Dodgers")
            }
            #expect(answered, "\(answer)")
            // What SIGTERM does: the group shuts down gracefully, the gateway drains, run() returns.
            await services.triggerGracefulShutdown()
            try await running.value
            let after = try? await URLSession.shared.data(from: url)
            #expect(after == nil, "the gateway no longer serves once the group has shut down")
        }
    }
}
