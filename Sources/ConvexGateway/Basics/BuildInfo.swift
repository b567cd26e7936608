/// What a running gateway was built from: the package's version, and the commit of its build. `convex-gateway
/// --version` prints them, the start-up line logs them, and `/metrics` exposes them as
/// `convex_gateway_build_info{version,commit} 1`.
public struct BuildInfo: Sendable, Equatable {
    /// The package's version, set here by hand at each release.
    public static let packageVersion = "0.1.0"

    /// The package's version.
    public var version: String
    /// The commit the binary was built from (the build's `CONVEX_GATEWAY_COMMIT`), or `unknown`.
    public var commit: String

    public init(version: String = BuildInfo.packageVersion, commit: String = "unknown") {
        self.version = version
        self.commit = commit
    }

    /// `convex-gateway 0.1.0 (commit 1a2b3c4)`: the `--version` line.
    public func versionLine(command: String) -> String {
        "\(command) \(version) (commit \(commit))"
    }
}
