import Convex
import ConvexGateway
import ConvexLocal
import Dispatch
import FuzzSupport
import Logging

/// A real gateway over a real local deployment (demo functions, an auth cookie, a ticket key) in the fuzzing process,
/// started once on loopback ports of the system's choosing and kept for the whole run.
enum InProcessGateway {
    static let port: Int = {
        let started = DispatchSemaphore(value: 0)
        let box = PortBox()
        // The fuzzer's own thread waits here, once; it is not a thread of Swift's concurrency pool.
        Task.detached {
            box.port = await start()
            started.signal()
        }
        started.wait()
        guard let port = box.port else { fail("the in-process gateway did not start") }
        return port
    }()

    private final class PortBox: @unchecked Sendable { var port: Int? }

    private static func start() async -> Int? {
        var logger = Logger(label: "fuzz-http")
        logger.logLevel = .critical
        do {
            let deployment = try await LocalDeployment.start(port: 0, logger: logger)
            var configuration = GatewayConfiguration()
            configuration.port = 0
            configuration.threads = 2
            configuration.maxWaitSeconds = 2
            configuration.heartbeatInterval = .seconds(1)
            // An unfinished request is dropped after this long without bytes: the bound of HTTPProperties.
            configuration.access.idleTimeoutSeconds = HTTPProperties.idleTimeoutSeconds
            configuration.access.authCookie = "convex_token"
            configuration.access.ticketKey = try StreamTicketKey(
                material: Array(repeating: 7, count: 32), source: "fuzz")
            let factory = try ClientUpstream.factory(deploymentUrl: deployment.url, logger: logger)
            let gateway = Gateway(configuration: configuration, logger: logger, upstreamFactory: factory)
            try gateway.start()
            // Served (heartbeats, sweepers) and kept for the life of the process.
            Task.detached { try? await gateway.run() }
            Keep.gateway = gateway
            Keep.deployment = deployment
            return gateway.port
        } catch {
            return nil
        }
    }

    private enum Keep {
        nonisolated(unsafe) static var gateway: Gateway?
        nonisolated(unsafe) static var deployment: LocalDeployment?
    }
}
