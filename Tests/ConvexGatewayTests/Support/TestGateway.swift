import Convex
import ConvexGateway
import ConvexLocal
import Foundation
import TestSupport
import Testing

/// The one way a test stands up a gateway, in the mode it needs (the shape of HummingbirdTesting's
/// `app.test(.router | .live)`):
///
/// - `TestGateway.run(.inProcess) { h in … }`: the gateway and a local deployment in the test process
///   (``GatewayHarness``): the fastest, with a test clock if wanted, and the objects themselves for white-box checks;
/// - `TestGateway.run(.process) { gateway in … }`: the real `convex-gateway` executable on its embedded deployment
///   (``GatewayProcess``): its descriptors, memory, exit status and log, and settings given as a user gives them;
/// - `TestGateway.run(.page) { gateway, browser, page in … }`: that process with a headless Chromium page on it.
///
/// Every mode's gateway answers the same HTTP client calls (``GatewayUnderTest``), and is torn down after `body`.
enum TestGateway {
    struct InProcess: Sendable { static var inProcess: InProcess { InProcess() } }
    struct Executable: Sendable { static var process: Executable { Executable() } }
    struct Page: Sendable { static var page: Page { Page() } }

    /// A gateway on 127.0.0.1, port 0, over a real local deployment, both in the test process, torn down after `body`.
    /// `clock` is the gateway's and the deployment's (heartbeats, token expiry): a test clock moves both; the gateway's
    /// upstream client keeps the real one (its connect and call deadlines).
    static func run<T: Sendable>(
        _ mode: InProcess,
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
        // Serves (heartbeats, sweepers) until `shutdown()`, as a service group would run it.
        async let serving: Void = gateway.run()
        let harness = GatewayHarness(gateway: gateway, deployment: deployment)
        do {
            let result = try await body(harness)
            await gateway.shutdown()
            try await serving
            await deployment.shutdown()
            return result
        } catch {
            await gateway.shutdown()
            try? await serving
            await deployment.shutdown()
            throw error
        }
    }

    /// Starts the gateway with `environment` added to a clean configuration and with `arguments`, runs `body`, then
    /// stops it with SIGTERM and checks that it was still running and exits cleanly.
    static func run<T: Sendable>(
        _ mode: Executable, environment extra: [String: String] = [:], arguments: [String] = [],
        _ body: (GatewayProcess) async throws -> T
    ) async throws -> T {
        let logPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("convex-gateway-\(UUID().uuidString).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        var environment = GatewayProcess.inheritedEnvironment
        environment["GATEWAY_PORT"] = "0"
        environment["GATEWAY_THREADS"] = "2"
        environment["GATEWAY_IDLE_TIMEOUT_SECONDS"] = "5"
        environment["LOG_LEVEL"] = "notice"
        // A closed stream is noticed at its next write: heartbeats every 2 s let descriptors settle quickly.
        environment["GATEWAY_HEARTBEAT_SECONDS"] = "2"
        environment.merge(extra) { _, new in new }
        let process = try ChildProcess(try GatewayProcess.binaryPath(), arguments: arguments) { options in
            options.directory = GatewayProcess.packageRoot
            options.environment = environment
            options.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        }
        defer { try? FileManager.default.removeItem(atPath: logPath) }

        var port: Int?
        _ = await eventually(timeout: .seconds(30)) {
            port = GatewayProcess.parsePort(log: (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
            return port != nil || !process.isRunning
        }
        guard let port else {
            await process.stop(grace: .seconds(5))
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw TestFailure("convex-gateway did not report its port within 30 s; log:\n\(log)")
        }
        let gateway = GatewayProcess(process: process, port: port, logPath: logPath)
        do {
            let result = try await body(gateway)
            #expect(process.isRunning, "the gateway process died during the test\(GatewayProcess.report(gateway.log))")
            let status = await gateway.stop()
            // A sanitizer's report (ThreadSanitizer exits 66) is in the log, which is deleted after the test.
            #expect(
                status == 0,
                "the gateway exited with status \(status) after SIGTERM\(GatewayProcess.report(gateway.log))")
            return result
        } catch {
            _ = await gateway.stop()
            throw error
        }
    }

    /// A gateway process (as `.process`) and a headless Chromium with a page open on it, for the browser suites.
    static func run<T: Sendable>(
        _ mode: Page, environment: [String: String] = [:], arguments: [String] = [],
        _ body: (GatewayProcess, DevToolsConnection, BrowserPage) async throws -> T
    ) async throws -> T {
        try await run(.process, environment: environment, arguments: arguments) { gateway in
            do {
                return try await HeadlessChromium.run { browser in
                    let page = try await BrowserPage.open(browser, url: "http://127.0.0.1:\(gateway.port)/healthz")
                    return try await body(gateway, browser, page)
                }
            } catch {
                // The gateway's side of the failure: its log goes with its process.
                let lines = gateway.log.split(separator: "\n").suffix(80).joined(separator: "\n")
                print("The gateway's log (port \(gateway.port)), last lines, for the failure below:\n\(lines)")
                throw error
            }
        }
    }
}

/// A gateway under test, whatever its mode: the HTTP calls tests make to it on 127.0.0.1.
protocol GatewayUnderTest: Sendable {
    var port: Int { get }
}

extension GatewayUnderTest {
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
