import Foundation
import TestSupport
import Testing

/// What `convex-gateway` says at start and at stop instead of degrading silently: typed inputs off without an admin
/// key, a port in use, and no line of the embedded deployment when it serves another.
@Suite("Start-up messages", .timeLimit(.minutes(3)))
struct StartupMessagesTests {
    @Test("with --convex-url: typed inputs off is said with its fix, and no line names the embedded deployment")
    func givenDeployment() async throws {
        let logPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("convex-gateway-\(UUID().uuidString).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let process = try ChildProcess(
            try GatewayProcess.binaryPath(),
            arguments: ["--convex-url", "http://127.0.0.1:9", "--port", "0", "--threads", "2"]
        ) { options in
            options.environment = GatewayProcess.inheritedEnvironment
            options.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        let port = await eventually(timeout: .seconds(30)) { GatewayProcess.parsePort(log: log()) != nil }
        #expect(port, "no port in \(log())")
        let status = await process.stop(grace: .seconds(15))
        #expect(status == 0)
        let text = log()
        #expect(text.contains("Typed inputs are off"), "\(text)")
        #expect(text.contains("CONVEX_ADMIN_KEY"), "\(text)")
        #expect(text.contains("Signal received"), "\(text)")
        #expect(!text.contains("ConvexLocal"), "\(text)")
        #expect(!text.contains("embedded deployment"), "\(text)")
    }

    @Test("a port in use is named, with the option that changes it")
    func portInUse() async throws {
        try await TestGateway.run(.process) { gateway in
            let run = try await ChildProcess.run(
                try GatewayProcess.binaryPath(), arguments: ["--port", "\(gateway.port)"],
                environment: GatewayProcess.inheritedEnvironment, timeout: .seconds(60))
            #expect(run.status == 1)
            #expect(
                run.stderr.contains("Error: port \(gateway.port) is in use on 127.0.0.1; pass --port (GATEWAY_PORT)"),
                "\(run.stderr)")
            #expect(!run.stderr.contains("HTTPServerError"), "\(run.stderr)")
        }
    }
}
