import Convex
import ConvexGateway
import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import TestSupport

let quietLogger: Logger = {
    var logger = Logger(label: "ConvexGatewayTests")
    logger.logLevel = .critical
    return logger
}()

/// A gateway and its local deployment running in the test process (`TestGateway.run(.inProcess)`): both objects, for
/// tests that look inside, and the HTTP client calls of ``GatewayUnderTest``.
struct GatewayHarness: GatewayUnderTest {
    let gateway: Gateway
    let deployment: LocalDeployment
    var port: Int { gateway.port ?? 0 }

    /// A second gateway (a replica, configured as the harness's gateway and then by `configure`) on the harness's
    /// deployment, for the length of `body`, which gets its port.
    func withReplica<T: Sendable>(
        configure: (inout GatewayConfiguration) -> Void = { _ in }, _ body: (Int) async throws -> T
    ) async throws -> T {
        var configuration = GatewayConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configuration.connectTimeout = .seconds(30)
        configure(&configuration)
        var client = ConvexClientConfiguration()
        client.connectTimeout = .seconds(30)
        let factory = try ClientUpstream.factory(
            deploymentUrl: deployment.url, configuration: client, logger: quietLogger)
        let replica = Gateway(configuration: configuration, logger: quietLogger, upstreamFactory: factory)
        try replica.start()
        async let serving: Void = replica.run()
        do {
            let result = try await body(replica.port ?? 0)
            await replica.shutdown()
            try await serving
            return result
        } catch {
            await replica.shutdown()
            try? await serving
            throw error
        }
    }
}

extension EventStreamReader {
    func nextEventAsync() async throws -> ReceivedEvent? {
        try await blocking { try self.nextEvent() }
    }

    func nextAsync() async throws -> ReceivedEvent? {
        try await blocking { try self.next() }
    }
}

extension TestResponse {
    /// The body parsed as plain JSON.
    var json: ConvexValue? { try? ConvexValue(plainJSON: body) }
    var errorCode: String? {
        if case .string(let code)? = json?["error"]?["code"] { return code }
        return nil
    }
}
