import Configuration

extension GatewaySettings {
    /// Reads every declared setting as flag > environment > default through swift-configuration: the flags are an
    /// in-memory provider in front of an environment-variables provider, and secret settings are marked secret in
    /// both and at the read, so an access reporter (such as the one `CONFIG_ACCESS_LOG_FILE` turns on) shows them
    /// redacted. An empty environment variable counts as unset.
    /// - Parameters:
    ///   - commandLine: The settings given as flags, by environment variable name (``SettingsCommandLine``).
    ///   - environment: The process environment.
    ///   - declarations: The settings to read; the tests pass their own.
    /// - Throws: ``SettingError`` naming the first setting whose value cannot be used (never repeating a secret).
    package init(
        commandLine: [String: String], environment: [String: String],
        declarations: [Setting] = GatewaySettings.declarations
    ) throws(SettingError) {
        let flags = InMemoryProvider(
            name: "command line",
            values: Dictionary(
                uniqueKeysWithValues: declarations.compactMap { setting in
                    commandLine[setting.environment].map {
                        (AbsoluteConfigKey(setting.key), ConfigValue(.string($0), isSecret: setting.isSecret))
                    }
                }))
        let variables = EnvironmentVariablesProvider(
            environmentVariables: environment.filter { !$0.value.isEmpty },
            secretsSpecifier: .specific(Set(declarations.filter(\.isSecret).map(\.environment))))
        let reader = ConfigReader(providers: [flags, variables])

        var texts: [String: String] = [:]
        for setting in declarations {
            texts[setting.environment] = reader.string(forKey: setting.key, isSecret: setting.isSecret)
        }
        // Two ways to give one value (a secret, or the file holding it): a flag wins over the environment.
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

        self.init()
        for setting in declarations {
            try setting.apply(texts[setting.environment], setting.name, &self)
        }
        try checkCombinations(declarations)
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

extension Setting {
    /// The setting's swift-configuration key: `GATEWAY_PORT` is `gateway.port`, which the environment-variables
    /// provider reads from `GATEWAY_PORT` again.
    var key: ConfigKey { ConfigKey(environment.lowercased().split(separator: "_").map(String.init)) }
}
