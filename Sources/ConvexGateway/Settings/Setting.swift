/// One setting of the `convex-gateway` executable: its flag, environment variable, documented default, help text,
/// whether it is secret, and how its text becomes part of ``GatewaySettings``. Every setting is declared once, in
/// `GatewaySettings+Declarations.swift`; `--help`, the lookup (flag > environment > default) and the check of the
/// tables of docs/configuration.md all read the declarations.
package struct Setting: Sendable {
    /// Where a setting is documented: its group in `--help`, and the section of docs/configuration.md whose table lists it.
    package enum Section: String, Sendable, CaseIterable {
        case configuration = "Configuration"
        case access = "Access controls and limits"
    }

    /// The command-line option, such as `--port`; `nil` for a setting read from the environment only.
    package let flag: String?
    /// The environment variable, such as `GATEWAY_PORT`; it also identifies the setting.
    package let environment: String
    /// What the setting does, in Markdown (`code` spans become plain text in `--help`).
    package let help: String
    /// The default as documented: the value ``GatewaySettings`` starts with, or a description of what happens when
    /// the setting is unset.
    package let defaultText: String
    /// The option's value in `--help`, such as `<seconds>`.
    package let valueName: String
    /// The values a choice accepts (`plain`, `clean`, `encoded`); empty for other settings.
    package let choices: [String]
    /// A credential: marked secret for swift-configuration (its access log redacts it), never logged, never repeated
    /// in an error message.
    package let isSecret: Bool
    /// The environment variable of another setting that gives the same value another way (a secret or the file
    /// holding it); setting both is an error, unless only one of them is a flag, which then wins.
    package let alternative: String?
    package internal(set) var section = Section.configuration
    /// Turns the setting's text (`nil` when unset) into its part of ``GatewaySettings``; `name` is ``name``.
    let apply: Apply

    typealias Apply =
        @Sendable (_ text: String?, _ name: String, _ settings: inout GatewaySettings) throws(SettingError)
        -> Void

    init(
        flag: String?, environment: String, help: String, defaultText: String, valueName: String,
        choices: [String] = [], isSecret: Bool = false, alternative: String? = nil,
        apply: @escaping Apply
    ) {
        self.flag = flag
        self.environment = environment
        self.help = help
        self.defaultText = defaultText
        self.valueName = valueName
        self.choices = choices
        self.isSecret = isSecret
        self.alternative = alternative
        self.apply = apply
    }

    /// How messages name the setting: `--port/GATEWAY_PORT`, or `GATEWAY_API_KEY` for one without a flag.
    package var name: String { flag.map { "\($0)/\(environment)" } ?? environment }

    /// The help text with what the declaration adds: the accepted choices, the alternative, and the secret marker.
    /// Markdown; the "Meaning" column of docs/configuration.md holds exactly this.
    package var documentation: String {
        var text = help
        if !choices.isEmpty { text += " One of " + choices.map { "`\($0)`" }.joined(separator: ", ") + "." }
        if let alternative {
            let other = GatewaySettings.declarations.first { $0.environment == alternative }
            text += " Set this or `\(other?.flag ?? alternative)`, not both."
        }
        if isSecret { text += " Secret: never logged." }
        return text
    }
}

/// Why the settings could not be read: the message names the setting (never a secret's value).
package struct SettingError: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String

    init(_ message: String) { self.message = message }

    package var description: String { message }
}
