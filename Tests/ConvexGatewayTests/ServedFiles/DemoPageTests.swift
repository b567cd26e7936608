import Foundation
import Testing

@testable import ConvexGateway

/// `GET /`: the demo page, served from the binary when the gateway runs on the embedded deployment. Its behaviour in a
/// real browser is tested in Browser/BrowserDemoPageTests.swift.
@Suite("The demo page route", .timeLimit(.minutes(5)))
struct DemoPageTests {
    @Test("with the demo page on, GET / answers the repository's page as HTML with an ETag and a content policy")
    func served() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.demoPage = true }) { h in
            let page = try await h.get("/")
            #expect(page.status == 200)
            #expect(page.header("Content-Type") == "text/html; charset=utf-8")
            let file = GatewayProcess.packageRoot.appendingPathComponent(
                "Sources/ConvexGateway/Resources/demo/index.html")
            #expect(page.body == Array(try Data(contentsOf: file)), "the embedded copy is the file")
            #expect(page.text.contains(#"import { ConvexGateway } from "/client.js";"#))
            #expect(page.header("Content-Security-Policy")?.contains("default-src 'self'") == true)
            let etag = try #require(page.header("ETag"))
            #expect(try await h.get("/", headers: ["If-None-Match": etag]).status == 304)
            #expect(try await h.post("/", json: "{}").status == 405)
        }
    }

    @Test("the content policy allows the page's own inline script and styles by their hashes, never 'unsafe-inline'")
    func contentPolicyHashesTheInlineBlocks() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.demoPage = true }) { h in
            let page = try await h.get("/")
            let policy = try #require(page.header("Content-Security-Policy"))
            #expect(!policy.contains("unsafe-inline"), "\(policy)")
            #expect(!policy.contains("unsafe-eval"), "\(policy)")
            // The directives by name: `script-src 'self' 'sha256-…'` is ["'self'", "'sha256-…'"].
            let directives = Dictionary(
                uniqueKeysWithValues: policy.split(separator: ";").map { directive in
                    let words = directive.split(separator: " ").map(String.init)
                    return (words.first ?? "", Array(words.dropFirst()))
                })
            #expect(directives["default-src"] == ["'self'"])
            #expect(directives["frame-ancestors"] == ["'none'"])
            // Found here with a pattern of the test's own, not with the page's parser: every inline block of the
            // served body, by its element.
            let element = #/<(script|style)(\s[^>]*)?>(.*?)</\1>/#.dotMatchesNewlines()
            let blocks = page.text.matches(of: element)
            let scripts = blocks.filter { $0.output.1 == "script" && !($0.output.2 ?? "").contains("src=") }
            let styles = blocks.filter { $0.output.1 == "style" }
            #expect(scripts.count == 1 && styles.count == 1, "the page's one inline module and one style sheet")
            for (directive, elements) in [("script-src", scripts), ("style-src", styles)] {
                let hashes = try #require(directives[directive], "\(policy)").filter { $0.hasPrefix("'sha256-") }
                #expect(
                    Set(hashes) == Set(elements.map { DemoPage.hashSource(Array($0.output.3.utf8)) }),
                    "\(directive) names exactly the hashes of the page's inline blocks: \(policy)")
            }
            // Hashes cover elements only: a style attribute or an inline event handler would be refused.
            let markup = page.text.replacing(element) { "<\($0.output.1)\($0.output.2 ?? "")></\($0.output.1)>" }
            let attributes = markup.matches(of: #/<[^>]*\s(style|on[a-z]+)\s*=/#.ignoresCase())
            #expect(attributes.isEmpty, "\(attributes.map { String($0.output.0) })")
        }
    }

    @Test("a hash source is CSP's: the spec's example script hashes as it says")
    func hashSourceIsTheSpecs() {
        let expected = "'sha256-qznLcsROx4GACP2dm0UCKCzCG+HiZ1guq6ZZDob/Tng='"
        #expect(DemoPage.hashSource(Array("alert('Hello, world.');".utf8)) == expected)
    }

    @Test("the policy's blocks are the page's: an inline script with a src is not one, a <scripts> tag is not a script")
    func inlineBlocksOfAPage() {
        let page = Array(
            #"<style>a{}</style><script src="/x.js"></script><scripts>no</scripts><script type="module">go()</script>"#
                .utf8)
        #expect(DemoPage.inlineBlocks("style", in: page).map { Array($0) } == [Array("a{}".utf8)])
        #expect(DemoPage.inlineBlocks("script", in: page).map { Array($0) } == [Array("go()".utf8)])
    }

    @Test("off (a real deployment's functions are not the demo's), GET / is a 404 like any unknown path")
    func offIsNotFound() async throws {
        try await TestGateway.run(.inProcess) { h in
            let page = try await h.get("/")
            #expect(page.status == 404)
            #expect(page.errorCode == "NotFound")
        }
    }
}
