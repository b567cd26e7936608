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

/// A real gateway on 127.0.0.1, port 0, over a real local deployment, torn down after `body`. `clock` is the gateway's
/// and the deployment's (heartbeats, token expiry): a test clock moves both; the gateway's upstream client keeps the
/// real one (its connect and call deadlines).
struct GatewayHarness: Sendable {
    let gateway: Gateway
    let deployment: LocalDeployment
    var port: Int { gateway.port ?? 0 }

    static func run<T: Sendable>(
        configure: (inout GatewayConfiguration) -> Void = { _ in },
        deploymentURL: String? = nil,
        adminKey: String? = nil,
        functions: FunctionRegistry = FunctionRegistry(),
        configureClient: (inout ConvexClientConfiguration) -> Void = { _ in },
        clock: GatewayClock = .continuous,
        _ body: (GatewayHarness) async throws -> T
    ) async throws -> T {
        let deployment = try await LocalDeployment.start(
            port: 0, adminKey: adminKey, functions: functions, clock: clock, logger: quietLogger)
        var configuration = GatewayConfiguration()
        configuration.port = 0
        configuration.threads = 2
        // Generous: the whole suite runs in parallel on two cores, so connecting can take seconds.
        configuration.connectTimeout = .seconds(30)
        // Typed inputs: with an admin key the gateway fetches the deployment's function spec.
        if let adminKey {
            // Generous for the same reason: a spec that arrives late leaves typed inputs untyped.
            configuration.functionSpec = FunctionSpecSource(
                deploymentURL: deployment.url, adminKey: try Secret(adminKey, source: "test admin key"),
                fetchTimeout: .seconds(30))
        }
        configure(&configuration)
        var clientConfiguration = ConvexClientConfiguration()
        clientConfiguration.connectTimeout = .seconds(30)
        configureClient(&clientConfiguration)
        let factory = try ClientUpstream.factory(
            deploymentUrl: deploymentURL ?? deployment.url, configuration: clientConfiguration, logger: quietLogger)
        let gateway = Gateway(
            configuration: configuration, logger: quietLogger, clock: clock, upstreamFactory: factory)
        try gateway.start()
        let harness = GatewayHarness(gateway: gateway, deployment: deployment)
        do {
            let result = try await body(harness)
            await gateway.shutdown()
            await deployment.shutdown()
            return result
        } catch {
            await gateway.shutdown()
            await deployment.shutdown()
            throw error
        }
    }

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
        do {
            let result = try await body(replica.port ?? 0)
            await replica.shutdown()
            return result
        } catch {
            await replica.shutdown()
            throw error
        }
    }

    func get(_ target: String, headers: [String: String] = [:]) async throws -> TestResponse {
        let port = self.port
        return try await blocking { try RawConnection.request("GET", target, port: port, headers: headers) }
    }

    func post(_ target: String, json: String, headers: [String: String] = ["Content-Type": "application/json"])
        async throws -> TestResponse
    {
        let port = self.port
        return try await blocking {
            try RawConnection.request("POST", target, port: port, headers: headers, body: Array(json.utf8))
        }
    }

    func request(_ method: String, _ target: String, headers: [String: String] = [:], body: String? = nil)
        async throws -> TestResponse
    {
        let port = self.port
        return try await blocking {
            try RawConnection.request(method, target, port: port, headers: headers, body: body.map { Array($0.utf8) })
        }
    }

    func openStream(_ target: String, headers: [String: String] = [:]) async throws -> EventStreamReader {
        let port = self.port
        return try await blocking { try EventStreamReader(port: port, target: target, headers: headers) }
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
