import Foundation
import TestSupport
import Testing

/// The settings as the real `convex-gateway` executable reads them: `--help`, refused values, and secrets kept out of
/// both its log and swift-configuration's access log.
@Suite struct SettingsEndToEndTests {
    /// Runs the executable to its end with `arguments` and `environment` (nothing else of the test's environment
    /// that could configure it); returns its exit status, standard output and standard error.
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (Int32, String, String)
    {
        let run = try await ChildProcess.run(
            try GatewayProcess.binaryPath(), arguments: arguments,
            environment: GatewayProcess.inheritedEnvironment.merging(environment) { _, new in new },
            timeout: .seconds(50))
        return (run.status, run.stdout, run.stderr)
    }

    @Test(.timeLimit(.minutes(5))) func helpListsEveryFlagAndVariable() async throws {
        let (status, help, _) = try await Self.run(["--help"])
        #expect(status == 0)
        for name in ["--port", "GATEWAY_PORT", "--api-key-file", "GATEWAY_API_KEY", "--log-level", "LOG_LEVEL"] {
            #expect(help.contains(name), "\(name)")
        }
    }

    @Test(
        .timeLimit(.minutes(5)),
        arguments: [
            (["--prot", "80"], [:], "Error: Unknown option '--prot'"),
            (
                [], ["GATEWAY_PORT": "http"],
                "Error: --port/GATEWAY_PORT must be a whole number in 0...65535, not 'http'"
            ),
            (["--log-level", "loud"], [:], "Error: --log-level/LOG_LEVEL must be one of"),
            (
                ["--cors-origins", "*", "--cors-allow-credentials", "true"], [:],
                "Error: --cors-origins/GATEWAY_CORS_ORIGINS '*' cannot be combined with "
                    + "--cors-allow-credentials/GATEWAY_CORS_ALLOW_CREDENTIALS true"
            ),
        ] as [([String], [String: String], String)])
    func aBadSettingStopsTheGateway(arguments: [String], environment: [String: String], message: String) async throws {
        let (status, _, errors) = try await Self.run(arguments, environment: environment)
        #expect(status == 64)
        #expect(errors.hasPrefix(message), "\(errors)")
    }

    /// The embedded deployment without an auth config takes any well-formed token, signed or not: the gateway says so
    /// at start, and does not once it is given one.
    @Test(.timeLimit(.minutes(5))) func anEmbeddedDeploymentThatTakesUnsignedTokensIsAWarning() async throws {
        let warning = "The embedded deployment accepts any well-formed JWT"
        let open = try await TestGateway.run(.process) { gateway in gateway.log }
        #expect(open.contains(warning), "log:\n\(open)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID().uuidString).json").path
        try #"{"providers": []}"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let configured = try await TestGateway.run(.process, environment: ["CONVEX_LOCAL_AUTH_CONFIG": file]) {
            gateway in
            gateway.log
        }
        #expect(configured.contains("Gateway listening"), "log:\n\(configured)")
        #expect(!configured.contains(warning), "log:\n\(configured)")
    }

    /// `--admin-key` shows in the process list: the gateway warns, without ever printing the key; the variable does not.
    @Test(.timeLimit(.minutes(5))) func anAdminKeyOnTheCommandLineIsAWarningThatNeverShowsIt() async throws {
        let key = "admin-\(UUID().uuidString)"
        let warning = "The admin key given as --admin-key shows in the process list"
        let flagged = try await TestGateway.run(.process, arguments: ["--admin-key", key]) { gateway in gateway.log }
        #expect(flagged.contains(warning), "log:\n\(flagged)")
        #expect(!flagged.contains(key))
        let variable = try await TestGateway.run(.process, environment: ["CONVEX_ADMIN_KEY": key]) { gateway in
            gateway.log
        }
        #expect(variable.contains("Gateway listening"), "log:\n\(variable)")
        #expect(!variable.contains(warning))
    }

    /// `CONFIG_ACCESS_LOG_FILE` makes swift-configuration log every setting read: the secrets appear redacted.
    @Test(.timeLimit(.minutes(5))) func secretsStayOutOfTheLogs() async throws {
        let accessLog = FileManager.default.temporaryDirectory
            .appendingPathComponent("config-access-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: accessLog) }
        let apiKey = "api-\(UUID().uuidString)"
        let adminKey = "admin-\(UUID().uuidString)"
        let environment = [
            "CONFIG_ACCESS_LOG_FILE": accessLog, "GATEWAY_API_KEY": apiKey, "CONVEX_ADMIN_KEY": adminKey,
            "LOG_LEVEL": "trace",
        ]
        let log = try await TestGateway.run(.process, environment: environment) { gateway in gateway.log }
        let access = try String(contentsOfFile: accessLog, encoding: .utf8)
        #expect(access.contains("gateway.port -> \"0\""), "\(access)")
        #expect(access.contains("gateway.api.key -> \"<REDACTED>\""), "\(access)")
        #expect(access.contains("convex.admin.key -> \"<REDACTED>\""), "\(access)")
        for key in [apiKey, adminKey] {
            #expect(!access.contains(key))
            #expect(!log.contains(key))
        }
    }

    /// With no `--threads`, libmicrohttpd gets one thread per CPU the process may use: held to one CPU (`taskset`, as a
    /// container's `--cpuset-cpus 0` holds it), the gateway starts one, not one per CPU of the machine.
    @Test(.timeLimit(.minutes(5))) func aGatewayHeldToOneCPUStartsOneThread() async throws {
        let logURL = FileManager.default.temporaryDirectory.appendingPathComponent("one-cpu-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: logURL) }
        let gateway = try ChildProcess(
            "/usr/bin/taskset", arguments: ["-c", "0", try GatewayProcess.binaryPath(), "--port", "0"]
        ) { options in
            options.environment = GatewayProcess.inheritedEnvironment.merging(["LOG_LEVEL": "notice"]) { $1 }
            options.standardError = try FileHandle(forWritingTo: logURL)
        }
        var log = ""
        let listening = await eventually(timeout: .seconds(30)) {
            log = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
            return log.contains("http.threads=") || !gateway.isRunning
        }
        await gateway.stop(grace: .seconds(15))
        #expect(listening, "the gateway did not log that it listens within 30 s")
        let threads = log.range(of: "http.threads=").map { log[$0.upperBound...].prefix { $0.isNumber } }
        #expect(threads == "1", "log:\n\(log)")
    }

    /// SIGTERM the moment the gateway announces its port (the first thing an orchestrator or a test can act on) drains
    /// it and exits 0, because the signal is trapped before anything starts, not only once the service group runs.
    /// `TestGateway.run(.process)` sends it as soon as its body returns and checks the exit status; each round is one more
    /// chance at the gap a late trap would leave.
    @Test(.timeLimit(.minutes(5))) func aSigtermRightAfterThePortIsAnnouncedDrains() async throws {
        for _ in 0..<3 {
            try await TestGateway.run(.process) { _ in }
        }
    }
}
