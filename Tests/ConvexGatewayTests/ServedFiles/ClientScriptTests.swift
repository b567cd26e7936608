import Foundation
import Testing

@testable import ConvexGateway

/// `GET /client.js`: the browser client is served from the binary, cacheable with an ETag. Its behaviour in a real
/// browser is tested in Browser/.
@Suite("The browser client route", .timeLimit(.minutes(5)))
struct ClientScriptTests {
    /// The module files, in the order ClientScript joins them.
    static let moduleFiles = ClientScript.modules.map {
        GatewayProcess.packageRoot.appendingPathComponent("Sources/ConvexGateway/Resources/client/\($0.name)")
    }

    @Test("GET /client.js answers the repository's script as JavaScript with an ETag; If-None-Match gets a 304")
    func servedWithETag() async throws {
        try await TestGateway.run(.inProcess) { h in
            let script = try await h.get("/client.js")
            #expect(script.status == 200)
            #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
            let files = try Self.moduleFiles.map { Array(try Data(contentsOf: $0)) }
            #expect(script.body == ClientScript.join(files), "the embedded copies are the files")
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
        try await TestGateway.run(
            .inProcess,
            configure: { configuration in
                configuration.access.apiKey = try? Secret("k-1", source: "test")
                configuration.access.cors = CORSPolicy(origins: ["https://app.test"])
            }
        ) { h in
            let script = try await h.get("/client.js", headers: ["Origin": "https://app.test"])
            #expect(script.status == 200)
            #expect(script.header("Access-Control-Allow-Origin") == "https://app.test")
            let query = try await h.get("/query/messages:list")
            #expect(query.status == 401, "function routes still need the key")
        }
    }

    @Test("the modules are served as one file, without their relative imports, each after the ones it imports")
    func modulesJoined() {
        let served = String(decoding: ClientScript.body, as: UTF8.self)
        #expect(!served.contains(#"from "./"#), "a relative import would fail in the browser")
        #expect(served.contains("export class EventStreamReader"))
        #expect(served.contains("export class ConvexGateway"))
        let reader = served.range(of: "class EventStreamReader")
        let gateway = served.range(of: "class ConvexGateway {")
        #expect(reader != nil && gateway != nil && reader!.lowerBound < gateway!.lowerBound, "imported first")
    }

    @Test("joining drops only the lines that import a relative module")
    func joiningDropsOnlyRelativeImports() {
        let first = Array("export const a = 1;\n".utf8)
        let second = Array(
            """
            import { a } from "./first.js";
            // import x from "./y.js" in a comment stays
            export const b = a + "import { a } from ./first.js";
            """.utf8)
        let joined = String(decoding: ClientScript.join([first, second]), as: UTF8.self)
        #expect(
            joined == """
                export const a = 1;

                // import x from "./y.js" in a comment stays
                export const b = a + "import { a } from ./first.js";

                """)
    }
}
