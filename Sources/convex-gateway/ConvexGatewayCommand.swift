import CBuildInfo
import Convex
import ConvexGateway
import ConvexLocal
import ConvexValues
import Foundation
import Logging
import ServiceLifecycle

/// `convex-gateway`: Convex queries, mutations, actions and live subscriptions as plain JSON over HTTP and SSE.
/// Its settings are declared in the gateway library (`GatewaySettings+Declarations.swift`), which also writes `--help`.
@main
enum ConvexGatewayCommand {
    static let overview =
        "Convex queries, mutations, actions and live subscriptions as plain JSON over HTTP and Server-Sent Events."
    static let discussion = """
        Every option can also be set with the environment variable named in its help, or as a key of the file \
        --config names (the option's name without --); a flag wins over the environment, which wins over the file, \
        which wins over the default, and an empty variable counts as unset. Without --convex-url the \
        gateway starts the embedded local deployment with its demo functions (no account, no network).
        """

    static func main() async {
        let settings: GatewaySettings
        let adminKeyFlag: Bool
        do {
            switch try SettingsCommandLine.parse(Array(CommandLine.arguments.dropFirst())) {
            case .help:
                print(GatewaySettings.help(command: "convex-gateway", overview: overview, discussion: discussion))
                return
            case .version:
                print(build.versionLine(command: "convex-gateway"))
                return
            case .values(let flags):
                settings = try GatewaySettings(commandLine: flags, environment: ProcessInfo.processInfo.environment)
                adminKeyFlag = flags["CONVEX_ADMIN_KEY"] != nil
            }
        } catch {
            // 64 is EX_USAGE, as swift-argument-parser exits on a usage error.
            fail("Error: \(error.message)\nSee 'convex-gateway --help'.", status: 64)
        }
        if let refusal = publicDemoRefusal(settings) {
            fail("Error: \(refusal)\nSee 'convex-gateway --help'.", status: 64)
        }
        do {
            try await run(settings, adminKeyFlag: adminKeyFlag)
        } catch {
            fail("Error: \(error)", status: EXIT_FAILURE)
        }
    }

    /// What the embedded deployment says of a function it does not have: it serves its demo functions only.
    static let embeddedDeploymentAdvice =
        "The gateway's embedded deployment serves only its demo functions (mlb:*, messages:*, logs:*, echo:*, "
        + "conformance:*); give --convex-url to serve your own deployment's."

    /// The package's version and the commit this binary was built from (Package.swift, `CBuildInfo`).
    static let build = BuildInfo(commit: String(cString: convex_gateway_build_commit()))

    static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(status)
    }

    /// - Parameter adminKeyFlag: the admin key came as `--admin-key`, which every user of the machine can read in the
    ///   process list.
    static func run(_ settings: GatewaySettings, adminKeyFlag: Bool = false) async throws {
        switch settings.logFormat {
        case .text:
            LoggingSystem.bootstrap(StreamLogHandler.standardError)
        case .json:
            let clock = GatewayClock.continuous
            LoggingSystem.bootstrap { label in
                JSONLogHandler(label: label, now: { clock.wallMilliseconds }, write: StandardErrorLines.write)
            }
        }
        var logger = Logger(label: "convex-gateway")
        logger.logLevel = settings.logLevel
        if adminKeyFlag {
            logger.warning(
                """
                The admin key given as --admin-key shows in the process list to every user of this machine; give it \
                in CONVEX_ADMIN_KEY or a file named by --admin-key-file instead
                """)
        }
        // SIGTERM and SIGINT are trapped before anything starts: one that arrives while the deployment starts, or just
        // after the port is announced, drains the gateway once it runs instead of killing the process.
        let shutdownSignals = await ShutdownSignals()

        var deployment: LocalDeployment?
        let deploymentURL: String
        var adminKey = settings.adminKey
        if let url = settings.convexURL {
            deploymentURL = url
        } else {
            // Typed inputs: the embedded deployment gets the configured admin key, else a random one.
            if adminKey == nil { adminKey = try Secret(Self.randomKey(), source: "generated admin key") }
            let authConfig = try settings.localAuthConfig.map { path throws(UnusableFile) in
                do throws(AuthConfigError) {
                    return try AuthConfig(contentsOfFile: path)
                } catch {
                    throw UnusableFile(message: "--local-auth-config/CONVEX_LOCAL_AUTH_CONFIG: \(error.message)")
                }
            }
            var localConfiguration = LocalDeployment.Configuration(
                host: "127.0.0.1", port: settings.localPort, adminKey: adminKey?.revealed, demoFunctions: true,
                authConfig: authConfig)
            localConfiguration.unknownFunctionAdvice = Self.embeddedDeploymentAdvice
            let local = try await LocalDeployment.start(localConfiguration, logger: logger)
            deployment = local
            deploymentURL = local.url
            logger.notice(
                "No Convex URL given: started the embedded local deployment with demo functions",
                metadata: ["convex.url": "\(deploymentURL)"])
            if authConfig == nil {
                logger.warning(
                    """
                    The embedded deployment accepts any well-formed JWT that has not expired, signed or not, so a \
                    caller can act as any user; give --local-auth-config to accept only tokens your providers signed
                    """)
            }
        }
        let factory = try ClientUpstream.factory(deploymentUrl: deploymentURL, logger: logger)
        var configuration = settings.gateway
        configuration.build = build
        configuration.servesBuiltInOpenAPI = true
        // The demo page calls the demo functions, which only the embedded deployment has.
        configuration.demoPage = deployment != nil
        if let adminKey {
            configuration.functionSpec = FunctionSpecSource(deploymentURL: deploymentURL, adminKey: adminKey)
        } else {
            logger.notice(
                """
                Typed inputs are off: without the deployment's admin key the gateway cannot fetch its function spec, \
                so arguments go to the deployment as sent (an int64 or bytes argument must be written in Convex JSON); \
                give the key in CONVEX_ADMIN_KEY or a file named by --admin-key-file to type them
                """)
        }
        let gateway = Gateway(configuration: configuration, logger: logger, upstreamFactory: factory)
        do {
            try gateway.start()
        } catch let error as PortInUse {
            await deployment?.shutdown()
            fail(
                "Error: port \(error.port) is in use on \(error.host); pass --port (GATEWAY_PORT) another port, or stop "
                    + "what listens there", status: EXIT_FAILURE)
        }
        // The deployment it serves, so a wrong --convex-url shows at once (no secret: a URL's user, password and query
        // are left out).
        logger.notice(
            "Gateway listening",
            metadata: [
                "http.host": "\(settings.gateway.host)", "http.port": "\(gateway.port ?? 0)",
                "http.threads": "\(gateway.threadCount)",
                "gateway.version": "\(build.version)", "gateway.commit": "\(build.commit)",
                "gateway.format": "\(settings.gateway.defaultFormat.rawValue)",
                "convex.url": "\(RedactedURL(deploymentURL))",
                "convex.deployment": "\(deployment == nil ? "given" : "embedded")",
            ])
        if configuration.demoPage, let port = gateway.port {
            let host = ["0.0.0.0", "::"].contains(settings.gateway.host) ? "127.0.0.1" : settings.gateway.host
            let address = host.contains(":") ? "[\(host)]" : host
            logger.notice("Demo page: open http://\(address):\(port)/ in a browser")
        }
        // SIGTERM and SIGINT drain the gateway (Gateway is a Service); the embedded deployment stops after it.
        let group = ServiceGroup(configuration: .init(services: [gateway], logger: logger))
        do {
            try await shutdownSignals.run(group, logger: logger, source: "convex_gateway")
        } catch {
            await deployment?.shutdown()
            throw error
        }
        await deployment?.shutdown()
    }
}

extension ConvexGatewayCommand {
    /// Why the gateway must not start: the embedded deployment (no `--convex-url`) takes calls of its demo functions
    /// from anyone, with any unsigned token, so serving it on an address other than loopback (`0.0.0.0` in a container)
    /// publishes an open deployment to the network, unless `--public-demo` says that is meant. Checked before anything
    /// starts.
    static func publicDemoRefusal(_ settings: GatewaySettings) -> String? {
        let host = settings.gateway.host
        guard settings.convexURL == nil, !settings.publicDemo, !isLoopback(host) else { return nil }
        return """
            Without --convex-url/CONVEX_URL the gateway serves the embedded demo deployment, whose functions anyone \
            may call, and --host/GATEWAY_HOST \(host) would publish it to the network. Give the Convex deployment \
            to serve with --convex-url (CONVEX_URL=https://<name>.convex.cloud), listen on loopback only \
            (GATEWAY_HOST=127.0.0.1), or, to publish the demo on purpose, set --public-demo true \
            (GATEWAY_PUBLIC_DEMO=true).
            """
    }

    /// Whether `host`, a numeric address, is a loopback one: 127.0.0.0/8, `::1`, or 127.0.0.0/8 mapped into IPv6.
    static func isLoopback(_ host: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes == Array(repeating: 0, count: 15) + [1] { return true }
        return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff && bytes[12] == 127
    }

    /// 32 random bytes as hex, for the embedded deployment's admin key.
    static func randomKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// A configured file that exists but cannot be used; the message names the setting.
struct UnusableFile: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
