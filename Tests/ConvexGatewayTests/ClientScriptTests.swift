import ConvexGateway
import Foundation
import Testing

/// `GET /client.js`: the browser client is served from the binary, cacheable with an ETag. Its behaviour in a real
/// browser is tested in Browser/.
@Suite("The browser client route", .timeLimit(.minutes(1)))
struct ClientScriptTests {
    static let sourceFile = GatewayProcess.packageRoot.appendingPathComponent(
        "Sources/ConvexGateway/Resources/client.js")

    @Test("GET /client.js answers the repository's script as JavaScript with an ETag; If-None-Match gets a 304")
    func servedWithETag() async throws {
        try await GatewayHarness.run { h in
            let script = try await h.get("/client.js")
            #expect(script.status == 200)
            #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
            #expect(script.body == Array(try Data(contentsOf: Self.sourceFile)), "the embedded copy is the file")
            #expect(script.text.contains("export class ConvexGateway"))
            let etag = try #require(script.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
            #expect(script.header("Cache-Control") == "no-cache")

            let unchanged = try await h.get("/client.js", headers: ["If-None-Match": "\"other\", W/\(etag)"])
            #expect(unchanged.status == 304)
            #expect(unchanged.body.isEmpty)
            #expect(unchanged.header("ETag") == etag)
            let changed = try await h.get("/client.js", headers: ["If-None-Match": "\"client-0\""])
            #expect(changed.status == 200)

            let head = try await h.request("HEAD", "/client.js")
            #expect(head.status == 200)
            #expect(head.header("ETag") == etag)
            let post = try await h.post("/client.js", json: "{}")
            #expect(post.status == 405)
        }
    }

    @Test("an API key does not guard /client.js, and CORS headers go on it as on every answer")
    func openAndCORS() async throws {
        try await GatewayHarness.run(configure: { configuration in
            configuration.access.apiKey = try? Secret("k-1", source: "test")
            configuration.access.cors = CORSPolicy(origins: ["https://app.test"])
        }) { h in
            let script = try await h.get("/client.js", headers: ["Origin": "https://app.test"])
            #expect(script.status == 200)
            #expect(script.header("Access-Control-Allow-Origin") == "https://app.test")
            let query = try await h.get("/query/messages:list")
            #expect(query.status == 401, "function routes still need the key")
        }
    }
}
