import Configuration

extension GatewaySettings {
    /// Reads every declared setting as flag > environment > settings file > default through swift-configuration: the
    /// flags are an in-memory provider in front of an environment-variables provider, in front of the file of
    /// `--config`/`GATEWAY_CONFIG` (``SettingsFile``) as another in-memory provider, and secret settings are marked
    /// secret in each and at the read, so an access reporter (such as the one `CONFIG_ACCESS_LOG_FILE` turns on) shows
    /// them redacted. An empty environment variable counts as unset.
    /// - Parameters:
    ///   - commandLine: The settings given as flags, by environment variable name (``SettingsCommandLine``).
    ///   - environment: The process environment.
    ///   - declarations: The settings to read; the tests pass their own.
    /// - Throws: ``SettingError`` naming the first setting whose value cannot be used (never repeating a secret).
    package init(
        commandLine: [String: String], environment: [String: String],
        declarations: [Setting] = GatewaySettings.declarations
    ) throws(SettingError) {
        let read = try Self.read(commandLine: commandLine, environment: environment, declarations: declarations)
        var texts = read.texts
        try Self.keepOneOfAlternatives(
            &texts, commandLine: commandLine, fromFile: read.fromFile, declarations: declarations)
        self.init()
        for setting in declarations {
            do {
                try setting.apply(texts[setting.environment], setting.name, &self)
            } catch {
                guard let file = read.file, read.fromFile.contains(setting.environment), let flag = setting.flag
                else { throw error }
                throw SettingError("\(printable(file.path)), key '\(flag.dropFirst(2))': \(error.message)")
            }
        }
        try checkCombinations(declarations)
    }

    /// Every declared setting's text, by environment variable name, as flag > environment > settings file; the
    /// settings file, if one is given; and the settings whose text is the file's (so that an error about one names
    /// the file and its key).
    private static func read(
        commandLine: [String: String], environment: [String: String], declarations: [Setting]
    ) throws(SettingError) -> (texts: [String: String], file: SettingsFile?, fromFile: Set<String>) {
        let flags = Self.provider("command line", commandLine, declarations)
        let variables = EnvironmentVariablesProvider(
            environmentVariables: environment.filter { !$0.value.isEmpty },
            secretsSpecifier: .specific(Set(declarations.filter(\.isSecret).map(\.environment))))
        let setEnvironment = environment.filter { !$0.value.isEmpty }
        var file: SettingsFile?
        if let config = declarations.first(where: { $0.environment == Self.configFileVariable }),
            let path = commandLine[config.environment] ?? setEnvironment[config.environment]
        {
            file = try SettingsFile.load(path: path, name: config.name, declarations: declarations)
        }
        let fileValues = file?.values ?? [:]
        let fileProvider = Self.provider("settings file", fileValues, declarations)
        let reader = ConfigReader(providers: [flags, variables, fileProvider])
        let fromFile = Set(
            fileValues.keys.filter { commandLine[$0] == nil && setEnvironment[$0] == nil })
        var texts: [String: String] = [:]
        for setting in declarations {
            texts[setting.environment] = reader.string(forKey: setting.key, isSecret: setting.isSecret)
        }
        return (texts, file, fromFile)
    }

    /// Two ways to give one value (a secret, or the file holding it): a flag or the environment wins over the
    /// settings file, and a flag over the environment; both given the same way is an error.
    private static func keepOneOfAlternatives(
        _ texts: inout [String: String], commandLine: [String: String], fromFile: Set<String>,
        declarations: [Setting]
    ) throws(SettingError) {
        for setting in declarations {
            guard let alternative = setting.alternative, texts[setting.environment] != nil,
                texts[alternative] != nil, fromFile.contains(setting.environment), !fromFile.contains(alternative)
            else { continue }
            texts[setting.environment] = nil
        }
        for setting in declarations {
            guard let alternative = setting.alternative, texts[setting.environment] != nil,
                texts[alternative] != nil
            else { continue }
            switch (commandLine[setting.environment] != nil, commandLine[alternative] != nil) {
            case (true, false): texts[alternative] = nil
            case (false, true): texts[setting.environment] = nil
            default:
                let other = declarations.first { $0.environment == alternative }
                throw SettingError("Set either \(setting.name) or \(other?.name ?? alternative), not both")
            }
        }
    }

    /// An in-memory provider of `texts` (by environment variable name), secrets marked secret.
    private static func provider(
        _ name: String, _ texts: [String: String], _ declarations: [Setting]
    ) -> InMemoryProvider {
        InMemoryProvider(
            name: name,
            values: Dictionary(
                uniqueKeysWithValues: declarations.compactMap { setting in
                    texts[setting.environment].map {
                        (AbsoluteConfigKey(setting.key), ConfigValue(.string($0), isSecret: setting.isSecret))
                    }
                }))
    }

    /// Refuses settings that are each valid alone but unsafe together, naming them.
    private func checkCombinations(_ declarations: [Setting]) throws(SettingError) {
        func name(_ environment: String) -> String {
            declarations.first { $0.environment == environment }?.name ?? environment
        }
        if convexURL != nil && localAuthConfig != nil {
            throw SettingError(
                "\(name("CONVEX_LOCAL_AUTH_CONFIG")) configures the embedded deployment, which "
                    + "\(name("CONVEX_URL")) replaces: the deployment at that URL verifies tokens by its own auth "
                    + "config; give one of them")
        }
        let cors = gateway.access.cors
        if cors.allowCredentials && cors.origins.contains("*") {
            throw SettingError(
                "\(name("GATEWAY_CORS_ORIGINS")) '*' cannot be combined with \(name("GATEWAY_CORS_ALLOW_CREDENTIALS")) "
                    + "true: every site could act as the signed-in user and read the answers; list the origins that "
                    + "may send credentials instead")
        }
    }
}

extension GatewaySettings {
    /// The setting that names the settings file (`--config`).
    static let configFileVariable = "GATEWAY_CONFIG"
}

extension Setting {
    /// The setting's swift-configuration key: `GATEWAY_PORT` is `gateway.port`, which the environment-variables
    /// provider reads from `GATEWAY_PORT` again.
    var key: ConfigKey { ConfigKey(environment.lowercased().split(separator: "_").map(String.init)) }
}
