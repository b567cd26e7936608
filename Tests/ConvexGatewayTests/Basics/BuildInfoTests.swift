import Foundation
import Logging
import TestSupport
import Testing

@testable import ConvexGateway

/// The version and commit the gateway reports: `--version`, and the `convex_gateway_build_info` metric.
@Suite struct BuildInfoTests {
    @Test func theMetricsNameTheVersionAndCommitWithTheValueOne() {
        let metrics = GatewayMetrics(build: BuildInfo(version: "1.2.3", commit: "0123abcd"))
        let text = String(decoding: metrics.render(), as: UTF8.self)
        #expect(text.contains("# TYPE convex_gateway_build_info gauge"), "\(text)")
        #expect(text.contains(#"convex_gateway_build_info{version="1.2.3",commit="0123abcd"} 1"#), "\(text)")
    }

    @Test func aGatewayReportsItsConfiguredBuild() {
        var configuration = GatewayConfiguration()
        configuration.build = BuildInfo(commit: "fedcba9")
        let core = GatewayCore(
            configuration: configuration, logger: Logger(label: "test"), render: { _, _ in [] },
            upstreamFactory: { _, _ in fatalError("no upstream in this test") })
        let text = String(decoding: core.metrics.render(), as: UTF8.self)
        #expect(
            text.contains(#"convex_gateway_build_info{version="\#(BuildInfo.packageVersion)",commit="fedcba9"} 1"#),
            "\(text)")
    }

    @Test("convex-gateway --version prints the version and the build's commit, and exits 0")
    func versionFlag() async throws {
        let run = try await ChildProcess.run(
            try GatewayProcess.binaryPath(), arguments: ["--version"], environment: GatewayProcess.inheritedEnvironment,
            timeout: .seconds(60))
        #expect(run.status == 0, "\(run.stderr)")
        let line = run.stdout.trimmingCharacters(in: .newlines)
        #expect(
            line.wholeMatch(of: /convex-gateway \d+\.\d+\.\d+ \(commit (unknown|[0-9a-f]{7,64})\)/) != nil, "\(line)")
        #expect(line.hasPrefix("convex-gateway \(BuildInfo.packageVersion) "), "\(line)")
    }
}
