import Foundation
import Testing

/// docs/replicas.md shows the balancer configuration users copy; it must be the one `scripts/replicas` and the
/// replica tests run.
@Suite struct ReplicaDocumentationTests {
    @Test("docs/replicas.md shows deploy/haproxy.cfg as it is")
    func theDocumentedConfigurationIsTheOneRun() throws {
        let root = GatewayProcess.packageRoot
        let file = try String(contentsOf: root.appendingPathComponent("deploy/haproxy.cfg"), encoding: .utf8)
        let page = try String(contentsOf: root.appendingPathComponent("docs/replicas.md"), encoding: .utf8)
        let start = try #require(page.range(of: "<!-- deploy/haproxy.cfg -->\n```haproxy\n"), "no marked block")
        let end = try #require(
            page.range(of: "```\n<!-- end deploy/haproxy.cfg -->", range: start.upperBound..<page.endIndex),
            "the marked block does not end")
        #expect(String(page[start.upperBound..<end.lowerBound]) == file, "docs/replicas.md differs from the file")
        let script = try String(contentsOf: root.appendingPathComponent("scripts/replicas"), encoding: .utf8)
        #expect(script.contains("-f deploy/haproxy.cfg"), "scripts/replicas runs another configuration")
    }
}
