import Configuration
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// The settings of `convex-gateway` (Settings/): the command line, flag > environment > default, checked values,
/// secrets, and `--help`.
@Suite struct SettingsTests {
    static func settings(_ flags: [String] = [], _ environment: [String: String] = [:]) throws -> GatewaySettings {
        guard case .values(let given) = try SettingsCommandLine.parse(flags) else {
            throw TestFailure("\(flags) asked for help")
        }
        return try GatewaySettings(commandLine: given, environment: environment)
    }

    static func error(_ flags: [String] = [], _ environment: [String: String] = [:]) -> String? {
        do {
            _ = try settings(flags, environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func aFlagWinsOverTheEnvironmentWhichWinsOverTheDefault() throws {
        #expect(try Self.settings(["--port", "9000"], ["GATEWAY_PORT": "7000"]).gateway.port == 9000)
        #expect(try Self.settings(["--port=9001"], ["GATEWAY_PORT": "7000"]).gateway.port == 9001)
        #expect(try Self.settings([], ["GATEWAY_PORT": "7000"]).gateway.port == 7000)
        #expect(try Self.settings().gateway.port == 8080)
    }

    @Test func anEmptyVariableIsUnset() throws {
        let settings = try Self.settings([], ["GATEWAY_PORT": "", "GATEWAY_HOST": "", "CONVEX_URL": ""])
        #expect(settings.gateway.port == 8080)
        #expect(settings.gateway.host == "127.0.0.1")
        #expect(settings.convexURL == nil)
    }

    @Test func theDefaultsAreTheConfigurationsDefaults() throws {
        let settings = try Self.settings()
        let gateway = GatewayConfiguration()
        #expect(settings.gateway.host == gateway.host)
        #expect(settings.gateway.heartbeatInterval == gateway.heartbeatInterval)
        #expect(settings.gateway.access.cors.exposedHeaders == ["ETag", "Retry-After", "Convex-Timestamp"])
        #expect(settings.gateway.access.apiKey == nil)
        #expect(settings.adminKey == nil)
        #expect(settings.logLevel == .info)
        let documented = Dictionary(uniqueKeysWithValues: GatewaySettings.declarations.map { ($0.environment, $0) })
        #expect(documented["GATEWAY_PORT"]?.defaultText == "`\(gateway.port)`")
        #expect(documented["GATEWAY_HEARTBEAT_SECONDS"]?.defaultText == "`15`")
        #expect(documented["GATEWAY_THREADS"]?.defaultText == "`0` (one per CPU it may use)")
        #expect(documented["GATEWAY_CORS_EXPOSE_HEADERS"]?.defaultText == "`ETag, Retry-After, Convex-Timestamp`")
        #expect(documented["LOG_LEVEL"]?.defaultText == "`info`")
    }

    @Test func aCallersShareOfSubscriptionsIsATenthOfTheTableUnlessGiven() throws {
        func share(_ flags: [String]) throws -> Int {
            try Self.settings(flags).gateway.effectiveMaxSubscriptionsPerCaller
        }
        #expect(try share([]) == 1000)
        #expect(try share(["--max-subscriptions", "200"]) == 20)
        #expect(try share(["--max-subscriptions", "5"]) == 1)
        #expect(try share(["--max-subscriptions-per-caller", "50"]) == 50)
        #expect(try share(["--max-subscriptions", "100", "--max-subscriptions-per-caller", "500"]) == 100)
    }

    @Test func bodiesInFlightAreNeverBoundBelowTheLargestBody() throws {
        func bound(_ flags: [String]) throws -> Int { try Self.settings(flags).gateway.effectiveMaxBodyBytesInFlight }
        #expect(try bound([]) == 32 << 20)
        #expect(try bound(["--max-body-bytes", "1048576", "--max-body-bytes-in-flight", "8388608"]) == 8 << 20)
        #expect(try bound(["--max-body-bytes-in-flight", "8388608"]) == 16 << 20, "raised to the 16 MiB body limit")
    }

    @Test func everyKindReadsItsValue() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let openAPI = directory.appendingPathComponent("openapi.yaml").path
        try "openapi: 3.1.0\n".write(toFile: openAPI, atomically: true, encoding: .utf8)
        let settings = try Self.settings(
            [
                "--host", "0.0.0.0", "--convex-url", "https://x.convex.cloud", "--format", "clean",
                "--heartbeat-seconds", "2.5", "--openapi-file", openAPI, "--log-level", "trace",
            ],
            [
                "GATEWAY_ALLOW_FUNCTIONS": "messages:*", "GATEWAY_CORS_ORIGINS": "https://App.example.com",
                "GATEWAY_CORS_ALLOW_CREDENTIALS": "TRUE", "GATEWAY_CORS_EXPOSE_HEADERS": "ETag, X-Extra",
                "GATEWAY_RATE_LIMIT": "0.5", "GATEWAY_MAX_BODY_BYTES": "1024", "GATEWAY_API_KEY": " key-1\n",
            ])
        #expect(settings.gateway.host == "0.0.0.0")
        #expect(settings.convexURL == "https://x.convex.cloud")
        #expect(settings.gateway.defaultFormat == .clean)
        #expect(settings.gateway.heartbeatInterval == .milliseconds(2500))
        #expect(settings.gateway.openAPIFile == openAPI)
        #expect(settings.logLevel == .trace)
        #expect(settings.gateway.access.functions.allow.count == 1)
        #expect(settings.gateway.access.cors.origins == ["https://app.example.com"])
        #expect(settings.gateway.access.cors.allowCredentials)
        #expect(settings.gateway.access.cors.exposedHeaders == ["ETag", "X-Extra"])
        #expect(settings.gateway.access.rateLimit == 0.5)
        #expect(settings.gateway.maxBodyBytes == 1024)
        #expect(settings.gateway.access.apiKey?.revealed == "key-1")
    }

    @Test(arguments: [
        ("GATEWAY_PORT", "http", "GATEWAY_PORT must be a whole number in 0...65535, not 'http'"),
        ("GATEWAY_PORT", "70000", "GATEWAY_PORT must be a whole number in 0...65535"),
        ("GATEWAY_HEARTBEAT_SECONDS", "0", "GATEWAY_HEARTBEAT_SECONDS must be a number of seconds from 0.001"),
        ("GATEWAY_HEARTBEAT_SECONDS", "0.0004", "GATEWAY_HEARTBEAT_SECONDS must be a number of seconds from 0.001"),
        ("GATEWAY_KEEP_WARM_SECONDS", "nan", "GATEWAY_KEEP_WARM_SECONDS must be a number of seconds"),
        ("GATEWAY_FORMAT", "xml", "GATEWAY_FORMAT must be one of plain, clean, encoded, not 'xml'"),
        ("LOG_LEVEL", "loud", "LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical"),
        ("GATEWAY_CORS_ALLOW_CREDENTIALS", "yes", "GATEWAY_CORS_ALLOW_CREDENTIALS must be true or false"),
        ("GATEWAY_RATE_LIMIT", "-1", "GATEWAY_RATE_LIMIT must be a number from 0 to 1000000"),
        ("GATEWAY_CONNECTION_MEMORY_BYTES", "1024", "GATEWAY_CONNECTION_MEMORY_BYTES must be a whole number in 4096"),
        ("GATEWAY_CORS_ORIGINS", "ftp://x", "--cors-origins/GATEWAY_CORS_ORIGINS: CORS origin 'ftp://x'"),
        ("GATEWAY_CORS_EXPOSE_HEADERS", "ETag, X:Y", "GATEWAY_CORS_EXPOSE_HEADERS: 'X:Y' is not a header name"),
        ("GATEWAY_DENY_FUNCTIONS", "a b", "--deny-functions/GATEWAY_DENY_FUNCTIONS: Function pattern"),
        ("GATEWAY_OPENAPI_FILE", "/nonexistent/x.yaml", "GATEWAY_OPENAPI_FILE '/nonexistent/x.yaml' is not a readable"),
        ("GATEWAY_API_KEY_FILE", "/nonexistent/key", "--api-key-file/GATEWAY_API_KEY_FILE: cannot read"),
    ])
    func anInvalidValueStopsWithAMessageNamingTheSetting(variable: String, value: String, message: String) {
        let error = Self.error([], [variable: value])
        #expect(error?.contains(message) == true, "\(error ?? "no error")")
    }

    @Test func anInvalidFlagNamesTheFlag() {
        #expect(Self.error(["--threads", "many"])?.hasPrefix("--threads/GATEWAY_THREADS must be") == true)
    }

    @Test func aSecretNeverAppearsInAMessage() {
        for (flags, environment) in [
            ([], ["GATEWAY_API_KEY": "two words"]),
            (["--admin-key", "bad\u{7}key"], [:]),
        ] as [([String], [String: String])] {
            let error = Self.error(flags, environment)
            #expect(error != nil)
            #expect(error?.contains("two") == false && error?.contains("bad") == false, "\(error ?? "")")
        }
        #expect(Self.error([], ["GATEWAY_API_KEY": " "])?.contains("GATEWAY_API_KEY") == true)
    }

    @Test func aSecretAndItsFileAreNotBothGiven() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString)").path
        try "from-file\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }

        let both = Self.error([], ["GATEWAY_API_KEY": "direct", "GATEWAY_API_KEY_FILE": file])
        #expect(both?.contains("Set either") == true && both?.contains("GATEWAY_API_KEY_FILE") == true)
        #expect(both?.contains("direct") == false)
        #expect(Self.error(["--admin-key", "a", "--admin-key-file", file])?.contains("not both") == true)
        // A flag wins over the other in the environment.
        let fileFlag = try Self.settings(["--api-key-file", file], ["GATEWAY_API_KEY": "direct"])
        #expect(fileFlag.gateway.access.apiKey?.revealed == "from-file")
        let keyFlag = try Self.settings(["--admin-key", "direct"], ["CONVEX_ADMIN_KEY_FILE": file])
        #expect(keyFlag.adminKey?.revealed == "direct")
        #expect(try Self.settings([], ["CONVEX_ADMIN_KEY_FILE": file]).adminKey?.revealed == "from-file")
    }

    @Test func aWildcardOriginWithCredentialsStopsWithAMessageNamingBoth() throws {
        for (flags, environment) in [
            (["--cors-origins", "*", "--cors-allow-credentials", "true"], [:]),
            ([], ["GATEWAY_CORS_ORIGINS": "https://app.test, *", "GATEWAY_CORS_ALLOW_CREDENTIALS": "true"]),
        ] as [([String], [String: String])] {
            let error = Self.error(flags, environment)
            #expect(error?.contains("--cors-origins/GATEWAY_CORS_ORIGINS '*'") == true, "\(error ?? "no error")")
            #expect(error?.contains("--cors-allow-credentials/GATEWAY_CORS_ALLOW_CREDENTIALS true") == true)
        }
        // Each alone is fine, and so are credentials for listed origins.
        #expect(try Self.settings(["--cors-origins", "*"]).gateway.access.cors.origins == ["*"])
        #expect(try Self.settings(["--cors-allow-credentials", "true"]).gateway.access.cors.allowCredentials)
        let listed = try Self.settings(["--cors-origins", "https://app.test", "--cors-allow-credentials", "true"])
        #expect(listed.gateway.access.cors.allowCredentials)
    }

    @Test func theEmbeddedDeploymentsAuthConfigWithAConvexURLStopsWithAMessageNamingBoth() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID().uuidString).json").path
        try #"{"providers": []}"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let error = Self.error(["--convex-url", "https://x.convex.cloud"], ["CONVEX_LOCAL_AUTH_CONFIG": file])
        #expect(error?.hasPrefix("--local-auth-config/CONVEX_LOCAL_AUTH_CONFIG configures") == true, "\(error ?? "")")
        #expect(error?.contains("--convex-url/CONVEX_URL") == true, "\(error ?? "")")
        // Each alone is fine.
        #expect(try Self.settings([], ["CONVEX_LOCAL_AUTH_CONFIG": file]).localAuthConfig == file)
        #expect(try Self.settings(["--convex-url", "https://x.convex.cloud"]).localAuthConfig == nil)
    }

    @Test(arguments: [
        (["--prot", "80"], "Unknown option '--prot'"),
        (["--api-key", "k"], "Unknown option '--api-key'"),
        (["serve"], "Unexpected argument 'serve'; options are written --name value"),
        (["--port"], "Missing value for '--port'"),
        (["--port", "1", "--port=2"], "'--port' is given twice; give it once"),
    ])
    func aBadCommandLineIsRefused(arguments: [String], message: String) {
        #expect(throws: SettingError(message)) { try SettingsCommandLine.parse(arguments) }
    }

    @Test func theListeningAddressIsNumericOrLocalhostAndCheckedFirst() throws {
        #expect(try Self.settings(["--host", "localhost"]).gateway.host == "127.0.0.1")
        #expect(try Self.settings(["--host", "::"]).gateway.host == "::")
        #expect(try Self.settings(["--host", "10.1.2.3"]).gateway.host == "10.1.2.3")
        let error = Self.error(["--host", "gateway.internal"])
        #expect(error?.contains("must be a numeric IPv4 or IPv6 address") == true, "\(error ?? "")")
        #expect(error?.contains("'gateway.internal'") == true, "\(error ?? "")")
    }

    @Test(arguments: ["convex.cloud/x", "ftp://x.convex.cloud", "https://"])
    func aConvexURLMistakeIsASettingError(url: String) {
        let error = Self.error(["--convex-url", url])
        #expect(error?.hasPrefix("--convex-url/CONVEX_URL: Deployment URL") == true, "\(error ?? "")")
    }

    @Test func helpIsAskedFor() throws {
        #expect(try SettingsCommandLine.parse(["--port", "1", "--help"]) == .help)
        #expect(try SettingsCommandLine.parse(["-h"]) == .help)
        #expect(try SettingsCommandLine.parse(["--version"]) == .version)
        #expect(try SettingsCommandLine.parse(["--port", "1", "--version"]) == .version)
        let list = try SettingsCommandLine.parse(["--allow-functions", "a:*,b:*"])
        #expect(list == .values(["GATEWAY_ALLOW_FUNCTIONS": "a:*,b:*"]))
    }

    @Test func theDeclarationsAreWellFormed() {
        let declarations = GatewaySettings.declarations
        #expect(Set(declarations.map(\.environment)).count == declarations.count)
        #expect(Set(declarations.compactMap(\.flag)).count == declarations.compactMap(\.flag).count)
        for setting in declarations {
            #expect(setting.environment.wholeMatch(of: /[A-Z][A-Z0-9]*(_[A-Z0-9]+)*/) != nil, "\(setting.environment)")
            if let flag = setting.flag { #expect(flag.wholeMatch(of: /--[a-z0-9]+(-[a-z0-9]+)*/) != nil, "\(flag)") }
            if let alternative = setting.alternative {
                #expect(declarations.first { $0.environment == alternative }?.alternative == setting.environment)
            }
            #expect(!setting.help.isEmpty && !setting.help.contains("|"), "\(setting.name)")
        }
    }

    /// Each setting's swift-configuration key is read by the environment-variables provider from the setting's own
    /// variable, and the flags are read before it.
    @Test func everySettingReadsItsOwnVariable() {
        for setting in GatewaySettings.declarations {
            let reader = ConfigReader(
                provider: EnvironmentVariablesProvider(environmentVariables: [setting.environment: "value"]))
            #expect(reader.string(forKey: setting.key) == "value", "\(setting.environment)")
        }
    }

    @Test func helpListsEverySetting() {
        let long = String(repeating: "Long text. ", count: 20)
        let help = GatewaySettings.help(command: "convex-gateway", overview: long, discussion: long)
        for setting in GatewaySettings.declarations {
            if let flag = setting.flag { #expect(help.contains("\(flag) \(setting.valueName)"), "\(flag)") }
            #expect(help.contains(setting.environment), "\(setting.environment)")
        }
        #expect(help.contains("--format <plain|clean|encoded>"))
        let words = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("Port (0 picks a free one). Environment GATEWAY_PORT; default 8080."))
        #expect(words.contains("GATEWAY_API_KEY The gateway API key itself"))
        #expect(help.contains("Secret: never logged."))
        #expect(help.contains("-h, --help"))
        #expect(!help.contains("`"))
        for line in help.split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
    }
}
