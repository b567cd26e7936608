import Foundation
import Testing

@testable import ConvexGateway

/// `--config <file>`: settings from a JSON or YAML file, below flags and the environment, with unknown keys and values
/// of the wrong type refused by name.
@Suite struct SettingsFileTests {
    /// Writes `text` to a new file ending in `.<kind>` and returns its path.
    static func file(_ text: String, kind: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString).\(kind)")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    static let yaml = """
        # Three settings, each of another kind.
        port: 9090
        format: clean
        allow-functions: ["messages:*", "admin/**"]
        read-your-writes: false
        """

    static let json =
        #"{"port": 9090, "format": "clean", "allow-functions": ["messages:*", "admin/**"], "read-your-writes": false}"#

    @Test(arguments: [(yaml, "yaml"), (yaml, "yml"), (json, "json")])
    func aFileSetsSettings(text: String, kind: String) throws {
        let path = try Self.file(text, kind: kind)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let settings = try SettingsTests.settings(["--config", path])
        #expect(settings.gateway.port == 9090)
        #expect(settings.gateway.defaultFormat == .clean)
        #expect(settings.gateway.access.functions.allow.count == 2)
        #expect(settings.gateway.readYourWrites == false)
        #expect(settings.configFile == path)
        // The environment variable names the file too.
        #expect(try SettingsTests.settings([], ["GATEWAY_CONFIG": path]).gateway.port == 9090)
    }

    @Test func theComposeSidecarsFileIsValid() throws {
        let path = GatewayProcess.packageRoot.appendingPathComponent("docker/gateway.yaml").path
        let settings = try SettingsTests.settings(["--config", path])
        #expect(settings.gateway.access.rateLimit == 50)
        #expect(settings.gateway.access.idleTimeoutSeconds == 30)
        #expect(settings.gateway.access.functions.deny.count == 1)
    }

    @Test func aFlagWinsOverTheEnvironmentWhichWinsOverTheFileWhichWinsOverTheDefault() throws {
        let path = try Self.file("port: 9090\nformat: clean\nheartbeat-seconds: 3\n", kind: "yaml")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let settings = try SettingsTests.settings(
            ["--config", path, "--port", "7070"], ["GATEWAY_PORT": "6060", "GATEWAY_FORMAT": "encoded"])
        #expect(settings.gateway.port == 7070)
        #expect(settings.gateway.defaultFormat == .encoded)
        #expect(settings.gateway.heartbeatInterval == .seconds(3))
        #expect(settings.gateway.keepWarm == GatewayConfiguration().keepWarm)
    }

    @Test(arguments: [
        ("prot: 8080\n", "yaml", "unknown key 'prot'"),
        (#"{"config": "other.json"}"#, "json", "unknown key 'config'"),
        (#"{"api-key": "x"}"#, "json", "unknown key 'api-key'"),
    ])
    func anUnknownKeyIsRefusedNamingItAndTheFile(text: String, kind: String, message: String) throws {
        let path = try Self.file(text, kind: kind)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = try #require(SettingsTests.error(["--config", path]))
        #expect(error.contains(message), "\(error)")
        #expect(error.contains(path), "\(error)")
    }

    @Test(arguments: [
        ("port: eighty\n", "yaml", "key 'port': --port/GATEWAY_PORT must be a whole number"),
        (#"{"port": {"value": 80}}"#, "json", "the value of 'port' must be a string, a number, true or false"),
        (#"{"read-your-writes": 1}"#, "json", "key 'read-your-writes': --read-your-writes/GATEWAY_READ_YOUR_WRITES"),
        (#"{"port": null}"#, "json", "the value of 'port' must be"),
        ("[1, 2]\n", "yaml", "is not a YAML mapping of settings"),
        ("{\"port\": 80", "json", "is not a JSON mapping of settings"),
    ])
    func aValueOfTheWrongTypeIsRefusedNamingTheKeyAndTheFile(text: String, kind: String, message: String) throws {
        let path = try Self.file(text, kind: kind)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = try #require(SettingsTests.error(["--config", path]))
        #expect(error.contains(message), "\(error)")
        #expect(error.contains(path), "\(error)")
    }

    @Test func aFileThatIsMissingOrOfAnotherKindIsRefused() throws {
        let missing = try #require(SettingsTests.error(["--config", "/nonexistent/settings.yaml"]))
        #expect(missing.contains("--config/GATEWAY_CONFIG '/nonexistent/settings.yaml' is not a readable file"))
        let path = try Self.file("port = 80\n", kind: "toml")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let other = try #require(SettingsTests.error(["--config", path]))
        #expect(other.contains("must end in .json, .yaml or .yml"), "\(other)")
    }

    @Test func aSecretInTheEnvironmentWinsOverItsFileInTheSettingsFile() throws {
        let keyFile = try Self.file("from-the-key-file\n", kind: "key")
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        let path = try Self.file("admin-key-file: \(keyFile)\n", kind: "yaml")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let settings = try SettingsTests.settings(["--config", path], ["CONVEX_ADMIN_KEY": "from-the-environment"])
        #expect(settings.adminKey?.revealed == "from-the-environment")
        #expect(try SettingsTests.settings(["--config", path]).adminKey?.revealed == "from-the-key-file")
    }
}
