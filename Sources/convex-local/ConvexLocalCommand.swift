import ArgumentParser
import ConvexLocal
import Foundation
import Logging
import ServiceLifecycle

/// `convex-local`: runs the embedded Convex-compatible deployment until SIGINT/SIGTERM.
@main
struct ConvexLocalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convex-local",
        abstract:
            "A Convex-compatible local deployment: sync protocol, HTTP functions API and demo functions on one port.",
        discussion: """
            Clients take the printed URL as their deployment URL, e.g. with the official Python client:
              python -c 'import convex; print(convex.ConvexClient("http://127.0.0.1:3210").query("mlb:first_place_team", {"division": "AL Central"}))'
            Data lives in memory. Without --auth-config, user JWTs are accepted without signature checks (development
            only), but exp and nbf are enforced; with it, tokens must come from one of its providers.
            Environment: CONVEX_LOCAL_ADMIN_KEY sets the admin key when --admin-key is not given.
            """
    )

    @Option(help: "Address to bind.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to bind (0 picks a free port).")
    var port: Int = 3210

    @Option(
        name: .customLong("admin-key"),
        help: "Admin key granting admin access (Authorization: Convex <key>). Without one, admin access is refused.")
    var adminKey: String?

    @Option(
        name: .customLong("auth-config"),
        help: ArgumentHelp(
            "JSON file {\"providers\": [...]} of trusted token issuers, in the shapes of Convex's auth.config.ts.",
            valueName: "file"))
    var authConfigPath: String?

    @Flag(name: .customLong("no-demo"), help: "Do not register the demo functions.")
    var noDemo = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    func run() async throws {
        var authConfig: AuthConfig?
        if let authConfigPath {
            do {
                authConfig = try AuthConfig(contentsOfFile: authConfigPath)
            } catch {
                throw ValidationError("--auth-config: \(error.message)")
            }
        }
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        // Trapped before the deployment starts and announces its URL: an early signal still shuts it down cleanly.
        let shutdownSignals = await ShutdownSignals()
        var logger = Logger(label: "convex-local")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let key = adminKey ?? ProcessEnvironment.value("CONVEX_LOCAL_ADMIN_KEY")
        var configuration = LocalDeployment.Configuration(
            host: host, port: port, adminKey: key, demoFunctions: !noDemo, authConfig: authConfig)
        // Nothing can be registered with this command's deployment: an unknown function is told what it serves.
        configuration.unknownFunctionAdvice =
            noDemo
            ? "convex-local --no-demo serves no functions."
            : "convex-local serves only its demo functions (mlb:*, messages:*, logs:*, echo:*, conformance:*)."
        let deployment = try await LocalDeployment.start(configuration, logger: logger)
        logger.notice(
            "Convex local deployment running",
            metadata: [
                "url": "\(deployment.url)", "admin": "\(key == nil ? "disabled" : "enabled")",
                "auth.providers": "\(authConfig.map { "\($0.providers.count)" } ?? "unverified")",
            ])
        // Written straight to the descriptor: `print` to a pipe is block-buffered, so a script that reads the URL
        // (`--port 0`) would get it only at exit.
        FileHandle.standardOutput.write(Data((deployment.url + "\n").utf8))
        let service = DeploymentService(deployment: deployment)
        let group = ServiceGroup(configuration: .init(services: [service], logger: logger))
        try await shutdownSignals.run(group, logger: logger)
    }
}

/// Keeps the process alive until a graceful shutdown, then stops the deployment.
struct DeploymentService: Service {
    let deployment: LocalDeployment

    func run() async throws {
        try? await gracefulShutdown()
        await deployment.shutdown()
    }
}

enum ProcessEnvironment {
    static func value(_ name: String) -> String? {
        guard let raw = getenv(name) else { return nil }
        let text = String(cString: raw)
        return text.isEmpty ? nil : text
    }
}
