import ArgumentParser
import Convex
import ConvexGateway
import ConvexLocal
import ConvexValues
import Foundation
import Logging
import ServiceLifecycle

/// `convex-gateway`: Convex queries, mutations, actions and live subscriptions as plain JSON over HTTP and SSE.
@main
struct ConvexGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convex-gateway",
        abstract: "Convex queries, mutations, actions and live subscriptions as plain JSON over HTTP and Server-Sent Events.",
        discussion: """
            Every option can also be set with the environment variable named in its help; a flag wins over the \
            environment, which wins over the default. Without --convex-url the gateway starts the embedded local \
            deployment with its demo functions (no account, no network).
            """
    )

    @Option(help: "Address to listen on. Env GATEWAY_HOST. Default 127.0.0.1.")
    var host: String?

    @Option(help: "Port to listen on (0 picks a free one). Env GATEWAY_PORT. Default 8080.")
    var port: Int?

    @Option(help: "Convex deployment URL (https://…convex.cloud). Env CONVEX_URL. Default: the embedded local deployment.")
    var convexURL: String?

    @Option(help: "Default output mode: plain, clean or encoded. Env GATEWAY_FORMAT. Default plain.")
    var format: String?

    @Option(help: "Seconds between SSE heartbeat comments. Env GATEWAY_HEARTBEAT_SECONDS. Default 15.")
    var heartbeatSeconds: Double?

    @Option(help: "Seconds an upstream subscription stays open after its last reader. Env GATEWAY_KEEP_WARM_SECONDS. Default 10.")
    var keepWarmSeconds: Double?

    @Option(help: "Seconds to wait for the deployment's answer before 504. Env GATEWAY_UPSTREAM_TIMEOUT_SECONDS. Default 30.")
    var upstreamTimeoutSeconds: Double?

    @Option(help: "Seconds to wait for the upstream connection before 503. Env GATEWAY_CONNECT_TIMEOUT_SECONDS. Default 5.")
    var connectTimeoutSeconds: Double?

    @Option(help: "Seconds before an idle user's upstream connection closes. Env GATEWAY_IDENTITY_IDLE_SECONDS. Default 60.")
    var identityIdleSeconds: Double?

    @Option(help: "Simultaneous HTTP connections before 503. Env GATEWAY_MAX_CONNECTIONS. Default 10000.")
    var maxConnections: Int?

    @Option(help: "Live upstream subscriptions before SSE gets 503. Env GATEWAY_MAX_SUBSCRIPTIONS. Default 10000.")
    var maxSubscriptions: Int?

    @Option(help: "Largest request body in bytes before 413. Env GATEWAY_MAX_BODY_BYTES. Default 16777216.")
    var maxBodyBytes: Int?

    @Option(help: "HTTP worker threads (0: one per core). Env GATEWAY_THREADS. Default 0.")
    var threads: Int?

    @Option(help: "OpenAPI document served at /openapi.yaml. Env GATEWAY_OPENAPI_FILE. Default openapi/openapi.yaml if present.")
    var openapiFile: String?

    @Option(help: "Port of the embedded local deployment (0 picks a free one). Env CONVEX_LOCAL_PORT. Default 0.")
    var localPort: Int?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. Env LOG_LEVEL. Default info.")
    var logLevel: String?

    @Option(help: "Admin key of the deployment, to fetch its function spec for typed inputs. Env CONVEX_ADMIN_KEY. Default none (embedded: a random key). Secret: never logged.")
    var adminKey: String?

    @Option(help: "File holding the deployment's admin key. Env CONVEX_ADMIN_KEY_FILE. Default none.")
    var adminKeyFile: String?

    /// API key, function allow/deny lists, CORS, rate limit and connection limits (AccessOptions.swift).
    @OptionGroup(title: "Access controls and limits")
    var access: AccessOptions

    func run() async throws {
        let settings = try Settings(self)
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "convex-gateway")
        logger.logLevel = settings.logLevel

        var deployment: LocalDeployment?
        let deploymentURL: String
        var adminKey = settings.adminKey
        if let url = settings.convexURL {
            deploymentURL = url
        } else {
            // Typed inputs: the embedded deployment gets the configured admin key, else a random one.
            if adminKey == nil { adminKey = try Secret(Self.randomKey(), source: "generated admin key") }
            let local = try await LocalDeployment.start(
                .init(host: "127.0.0.1", port: settings.localPort, adminKey: adminKey?.revealed, demoFunctions: true),
                logger: logger)
            deployment = local
            deploymentURL = local.url
            logger.notice(
                "No Convex URL given: started the embedded local deployment with demo functions",
                metadata: ["convex.url": "\(deploymentURL)"])
        }
        let factory = try ClientUpstream.factory(deploymentUrl: deploymentURL, logger: logger)
        var configuration = settings.gateway
        if let adminKey { configuration.functionSpec = FunctionSpecSource(deploymentURL: deploymentURL, adminKey: adminKey) }
        let gateway = Gateway(configuration: configuration, logger: logger, upstreamFactory: factory)
        try gateway.start()
        logger.notice(
            "Gateway listening",
            metadata: [
                "http.host": "\(settings.gateway.host)", "http.port": "\(gateway.port ?? 0)",
                "gateway.format": "\(settings.gateway.defaultFormat.rawValue)",
            ])
        let service = GatewayService(gateway: gateway, deployment: deployment)
        let group = ServiceGroup(
            configuration: .init(services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

/// Runs until a graceful shutdown (SIGTERM/SIGINT), then drains the gateway and stops the embedded deployment.
extension ConvexGatewayCommand {
    /// 32 random bytes as hex, for the embedded deployment's admin key.
    static func randomKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

struct GatewayService: Service {
    let gateway: Gateway
    let deployment: LocalDeployment?

    func run() async throws {
        try? await gracefulShutdown()
        await gateway.shutdown()
        await deployment?.shutdown()
    }
}

/// The command's options resolved as flag > environment > default, with every value checked.
struct Settings {
    var gateway = GatewayConfiguration()
    var convexURL: String?
    var localPort = 0
    var logLevel = Logger.Level.info
    /// The deployment's admin key (typed inputs); secret.
    var adminKey: Secret?

    init(_ command: ConvexGatewayCommand, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let source = SettingSource(environment: environment)
        func seconds(_ flag: Double?, _ name: String) throws -> Duration? {
            guard let text = source.value(flag.map { String($0) }, name) else { return nil }
            guard let number = Double(text), number > 0, number <= 86_400 else {
                throw ValidationError("\(name) must be a number of seconds above 0, not '\(text)'")
            }
            return .milliseconds(Int64(number * 1000))
        }
        if let host = source.value(command.host, "GATEWAY_HOST") { gateway.host = host }
        if let port = try source.int(command.port, "GATEWAY_PORT", range: 0...65535) { gateway.port = port }
        convexURL = source.value(command.convexURL, "CONVEX_URL")
        if let format = source.value(command.format, "GATEWAY_FORMAT") {
            guard let mode = OutputFormat(rawValue: format) else {
                throw ValidationError("GATEWAY_FORMAT must be plain, clean or encoded, not '\(format)'")
            }
            gateway.defaultFormat = mode
        }
        if let d = try seconds(command.heartbeatSeconds, "GATEWAY_HEARTBEAT_SECONDS") { gateway.heartbeatInterval = d }
        if let d = try seconds(command.keepWarmSeconds, "GATEWAY_KEEP_WARM_SECONDS") { gateway.keepWarm = d }
        if let d = try seconds(command.upstreamTimeoutSeconds, "GATEWAY_UPSTREAM_TIMEOUT_SECONDS") { gateway.upstreamTimeout = d }
        if let d = try seconds(command.connectTimeoutSeconds, "GATEWAY_CONNECT_TIMEOUT_SECONDS") { gateway.connectTimeout = d }
        if let d = try seconds(command.identityIdleSeconds, "GATEWAY_IDENTITY_IDLE_SECONDS") { gateway.identityIdleTimeout = d }
        if let n = try source.int(command.maxConnections, "GATEWAY_MAX_CONNECTIONS", range: 1...1_000_000) { gateway.maxConnections = n }
        if let n = try source.int(command.maxSubscriptions, "GATEWAY_MAX_SUBSCRIPTIONS", range: 1...1_000_000) { gateway.maxSubscriptions = n }
        if let n = try source.int(command.maxBodyBytes, "GATEWAY_MAX_BODY_BYTES", range: 0...(1 << 30)) { gateway.maxBodyBytes = n }
        if let n = try source.int(command.threads, "GATEWAY_THREADS", range: 0...256) { gateway.threads = n }
        if let file = source.value(command.openapiFile, "GATEWAY_OPENAPI_FILE") {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw ValidationError("GATEWAY_OPENAPI_FILE '\(file)' is not a readable file")
            }
            gateway.openAPIFile = file
        } else if FileManager.default.isReadableFile(atPath: "openapi/openapi.yaml") {
            gateway.openAPIFile = "openapi/openapi.yaml"
        }
        if let port = try source.int(command.localPort, "CONVEX_LOCAL_PORT", range: 0...65535) { localPort = port }
        try command.access.apply(to: &gateway.access, environment: environment)
        do {
            adminKey = try Secret.load(
                value: source.value(command.adminKey, "CONVEX_ADMIN_KEY"), valueName: "--admin-key/CONVEX_ADMIN_KEY",
                file: source.value(command.adminKeyFile, "CONVEX_ADMIN_KEY_FILE"), fileName: "--admin-key-file/CONVEX_ADMIN_KEY_FILE")
        } catch {
            throw ValidationError(error.message)
        }
        if let level = source.value(command.logLevel, "LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level) else {
                throw ValidationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
            }
            logLevel = parsed
        }
    }
}
