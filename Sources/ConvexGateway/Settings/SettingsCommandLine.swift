/// The command line of `convex-gateway`: `--flag value` or `--flag=value` for declared settings (each at most once),
/// or `-h`/`--help`, or `--version`.
///
/// Why not a library parser: swift-argument-parser declares each option as a stored property, which would declare
/// every setting a second time; swift-configuration's `CommandLineArgumentsProvider` (behind its
/// `CommandLineArguments` trait) splits every value at commas, so the comma-separated settings
/// (`--allow-functions 'a:*,b:*'`) would not read back as one string, and it silently ignores unknown options and
/// stray arguments, so a mistyped `--prot 80` would start the gateway on its default port. The flags read here go
/// to swift-configuration as an in-memory provider in front of the environment (`GatewaySettings+Resolve.swift`).
package enum SettingsCommandLine: Sendable, Equatable {
    /// `-h` or `--help`: print the help and exit.
    case help
    /// `--version`: print the version and the build's commit, and exit.
    case version
    /// The settings given, by environment variable name (which identifies a setting).
    case values([String: String])

    /// Reads `arguments` (without the program name).
    /// - Throws: ``SettingError`` for an unknown option, an option without its value or given twice, or a stray
    ///   argument.
    package static func parse(
        _ arguments: [String], settings: [Setting] = GatewaySettings.declarations
    ) throws(SettingError) -> SettingsCommandLine {
        var values: [String: String] = [:]
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" { return .help }
            if argument == "--version" { return .version }
            guard argument.hasPrefix("--") else {
                throw SettingError("Unexpected argument '\(printable(argument))'; options are written --name value")
            }
            let flag: String
            let value: String
            if let equals = argument.firstIndex(of: "=") {
                flag = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            } else {
                guard index < arguments.endIndex else { throw SettingError("Missing value for '\(argument)'") }
                flag = argument
                value = arguments[index]
                index += 1
            }
            guard let setting = settings.first(where: { $0.flag == flag }) else {
                throw SettingError("Unknown option '\(printable(flag))'")
            }
            // A flag given twice is a mistake (an edited command line, a script's default and a caller's choice):
            // keeping one silently would hide which one is in force.
            guard values[setting.environment] == nil else {
                throw SettingError("'\(flag)' is given twice; give it once")
            }
            values[setting.environment] = value
        }
        return .values(values)
    }
}
