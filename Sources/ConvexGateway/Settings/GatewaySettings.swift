import Logging

/// Everything the `convex-gateway` executable is configured with: the gateway's configuration, and what only the
/// executable uses (the deployment to reach, the embedded deployment's port, the log level, the admin key).
///
/// The defaults are the ones these properties start with (and `GatewayConfiguration`'s); the settings that change
/// them are declared in `GatewaySettings+Declarations.swift`, and read by ``init(commandLine:environment:)``.
package struct GatewaySettings: Sendable {
    /// The gateway library's configuration.
    package var gateway = GatewayConfiguration()
    /// The Convex deployment; `nil` starts the embedded local deployment with its demo functions.
    package var convexURL: String?
    /// Port of the embedded local deployment; 0 picks a free one.
    package var localPort = 0
    /// The embedded local deployment's auth config file (trusted token issuers); `nil`: unverified tokens.
    package var localAuthConfig: String?
    /// The embedded deployment's demo functions may be served on a non-loopback address (`convex-gateway` refuses to
    /// start so otherwise).
    package var publicDemo = false
    /// The log level of the whole process.
    package var logLevel = Logger.Level.info
    /// How log lines are written: swift-log's text, or one JSON object per line.
    package var logFormat = LogFormat.text
    /// The deployment's admin key, to fetch its function spec for typed inputs.
    package var adminKey: Secret?
    /// The settings file it was given (`--config`), read before every other setting.
    package var configFile: String?

    package init() {}
}
