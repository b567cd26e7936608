import ConvexGateway
import ConvexLocal
import Foundation
import Logging
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The example of docs/configuration.md, "Embedding the gateway in a Swift app", with only the public API: the page
/// shows it as written here, and it compiles and serves.
@Suite(.timeLimit(.minutes(1))) struct EmbeddingExampleTests {
    static let page = "docs/configuration.md"

    /// The example as the page prints it. ``theDocumentedExampleServesAQuery()`` makes the same calls, but on port 0,
    /// against a local deployment, quietly, and with `start()`/`shutdown()` in place of `run()`.
    static let documented = """
        import ConvexGateway
        import Logging

        let logger = Logger(label: "my-app.gateway")
        var configuration = GatewayConfiguration()
        configuration.port = 8080
        configuration.access.cors = CORSPolicy(origins: ["https://app.example.com"])
        let upstreams = try ClientUpstream.factory(deploymentUrl: "https://happy-otter-123.convex.cloud", logger: logger)
        let gateway = Gateway(configuration: configuration, logger: logger, upstreamFactory: upstreams)
        try await gateway.run()  // until the task is cancelled; or start() and later shutdown()

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
            try gateway.start()
            let port = try #require(gateway.port)
            let url = try #require(
                URL(string: "http://127.0.0.1:\(port)/query/mlb:first_place_team?division=NL%20West"))
            let (data, _) = try await URLSession.shared.data(from: url)
            #expect(String(decoding: data, as: UTF8.self).contains("Dodgers"))
            await gateway.shutdown()
        }
    }
}
