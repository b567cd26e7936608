import Foundation
import TestSupport
import Testing

/// What `convex-gateway` says instead of degrading silently: typed inputs off without an admin key, a port in use, no
/// line of the embedded deployment when it serves another, and what the embedded deployment serves when a function is
/// not one of them.
@Suite("Start-up messages", .timeLimit(.minutes(3)))
struct StartupMessagesTests {
    @Test(
        """
        with --convex-url, outside the repository: typed inputs off is said with its fix, no line names the embedded \
        deployment, and /openapi.yaml is the document built into the binary
        """)
    func givenDeployment() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let logPath = directory.appendingPathComponent("convex-gateway.log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = try ChildProcess(
            try GatewayProcess.binaryPath(),
            arguments: ["--convex-url", "http://127.0.0.1:9", "--port", "0", "--threads", "2"]
        ) { options in
            options.environment = GatewayProcess.inheritedEnvironment
            options.directory = directory
            options.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        _ = await eventually(timeout: .seconds(30)) { GatewayProcess.parsePort(log: log()) != nil }
        let port = try #require(GatewayProcess.parsePort(log: log()), "no port in \(log())")
        let document = try await blocking { try RawConnection.request("GET", "/openapi.yaml", port: port) }
        #expect(document.status == 200)
        #expect(document.text.hasPrefix("openapi: 3.1.0"))
        let status = await process.stop(grace: .seconds(15))
        #expect(status == 0)
        let text = log()
        #expect(text.contains("Typed inputs are off"), "\(text)")
        #expect(text.contains("CONVEX_ADMIN_KEY"), "\(text)")
        #expect(text.contains("Signal received"), "\(text)")
        #expect(!text.contains("ConvexLocal"), "\(text)")
        #expect(!text.contains("embedded deployment"), "\(text)")
    }

    @Test("a misspelled function on the embedded deployment is told what that deployment serves")
    func misspelledFunctionOnTheEmbeddedDeployment() async throws {
        try await TestGateway.run(.process) { gateway in
            let answer = try await gateway.get("/query/mlb:first_place_tem")
            #expect(answer.status == 404)
            #expect(answer.errorCode == "FunctionNotFound")
            #expect(answer.text.contains("Could not find public function for 'mlb:first_place_tem'."), "\(answer.text)")
            #expect(answer.text.contains("embedded deployment serves only its demo functions"), "\(answer.text)")
            #expect(!answer.text.contains("register it"), "\(answer.text)")
        }
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
