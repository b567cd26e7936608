import ConvexGateway
import ConvexLocal
import Foundation
import Logging
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The example of docs/configuration.md, "Embedding the gateway in a Swift app", with only the public API: it compiles
/// and serves.
@Suite(.timeLimit(.minutes(1))) struct EmbeddingExampleTests {
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
