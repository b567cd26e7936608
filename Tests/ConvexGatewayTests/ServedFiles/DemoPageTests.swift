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

    @Test("off (a real deployment's functions are not the demo's), GET / is a 404 like any unknown path")
    func offIsNotFound() async throws {
        try await TestGateway.run(.inProcess) { h in
            let page = try await h.get("/")
            #expect(page.status == 404)
            #expect(page.errorCode == "NotFound")
        }
    }
}
