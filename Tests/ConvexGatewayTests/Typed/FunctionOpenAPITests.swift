import ConvexGateway
import ConvexLocal
import ConvexValues
import Foundation
import TestSupport
import Testing

/// `GET /openapi.yaml?functions=1`: the per-deployment document, checked for content and validated with
/// `openapi-spec-validator` from the test virtualenv.
@Suite("Per-deployment OpenAPI document", .timeLimit(.minutes(5)))
struct FunctionOpenAPITests {
    static let installHint = """
        openapi-spec-validator is needed to validate the generated document. Install it with `scripts/test` \
        (which creates .venv and sets CONVEX_TEST_PYTHON), or run `bash -c '. scripts/prereqs.sh; ensure_python_venv'` \
        and `export CONVEX_TEST_PYTHON=$PWD/.venv/bin/python`.
        """

    /// `$CONVEX_TEST_PYTHON`, else `.venv/bin/python` in the package root.
    static var python: String? {
        if let env = ProcessInfo.processInfo.environment["CONVEX_TEST_PYTHON"], !env.isEmpty,
            FileManager.default.isExecutableFile(atPath: env)
        {
            return env
        }
        let root = GatewayProcess.packageRoot
        let venv = root.appendingPathComponent(".venv/bin/python").path
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : nil
    }

    /// Runs `python -m openapi_spec_validator` on the document; returns its exit status and output.
    static func validate(_ document: [UInt8]) async throws -> (Int32, String) {
        guard let python else {
            Issue.record(Comment(rawValue: installHint))
            return (-1, "python missing")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("functions.yaml")
        try Data(document).write(to: file)
        let run = try await ChildProcess.run(python, arguments: ["-m", "openapi_spec_validator", file.path])
        let text = run.stdout + run.stderr
        if run.status != 0, text.contains("No module named") {
            Issue.record(Comment(rawValue: installHint))
        }
        return (run.status, text)
    }

    /// The document parsed with Foundation (its `$ref`/`$integer` keys are not Convex field names).
    static func parse(_ body: [UInt8]) -> Any? { try? JSONSerialization.jsonObject(with: Data(body)) }

    static func at(_ value: Any?, _ keys: String...) -> Any? {
        var current = value
        for key in keys { current = (current as? [String: Any])?[key] }
        return current
    }

    /// Canonical JSON text of a parsed value, for comparisons.
    static func text(_ value: Any?) -> String? {
        guard let value,
            let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static func resultSchema(_ document: Any?, _ path: String, _ method: String) -> String? {
        text(at(document, "paths", path, method, "responses", "200", "content", "application/json", "schema"))
    }

    @Test("one operation per public function, int64 and bytes per output mode, valid OpenAPI 3.1")
    func document() async throws {
        try await TestGateway.run(
            .inProcess, adminKey: TypedInputTests.adminKey, functions: TypedInputTests.functions()
        ) { h in
            let plain = try await h.get("/openapi.yaml?functions=1")
            #expect(plain.status == 200, "\(plain.text)")
            #expect(plain.header("content-type") == "application/yaml")
            let doc = Self.parse(plain.body)
            #expect(Self.at(doc, "openapi") as? String == "3.1.0")
            // Queries get GET and POST, mutations and actions POST only; internal functions are absent.
            #expect(Self.at(doc, "paths", "/query/conformance:typed", "get") != nil)
            #expect(Self.at(doc, "paths", "/query/conformance:typed", "post") != nil)
            #expect(Self.at(doc, "paths", "/mutation/typed:store", "post") != nil)
            #expect(Self.at(doc, "paths", "/mutation/typed:store", "get") == nil)
            #expect(Self.at(doc, "paths", "/action/typed:choice", "post") != nil)
            #expect(Self.at(doc, "paths", "/query/conformance:internalQuery") == nil)
            #expect(
                Self.resultSchema(doc, "/query/conformance:typed", "get") == #"{"format":"int64","type":"integer"}"#)
            let store = Self.at(
                doc, "paths", "/mutation/typed:store", "post", "responses", "200", "content", "application/json",
                "schema")
            #expect(Self.text(Self.at(store, "properties", "logo")) == #"{"contentEncoding":"base64","type":"string"}"#)
            #expect(Self.text(Self.at(store, "required")) == #"["logo","wins"]"#)
            let args = Self.at(
                doc, "paths", "/mutation/typed:store", "post", "requestBody", "content", "application/json", "schema")
            #expect(Self.at(args, "properties", "team", "properties", "wins", "oneOf") != nil)

            let cleanResponse = try await h.get("/openapi.yaml?functions=1&format=clean")
            let clean = Self.parse(cleanResponse.body)
            #expect(
                Self.resultSchema(clean, "/query/conformance:typed", "post")
                    == #"{"pattern":"^-?[0-9]+$","type":"string"}"#)
            let encodedResponse = try await h.get("/openapi.yaml?functions=1&format=encoded")
            let encoded = Self.parse(encodedResponse.body)
            let int64 = Self.at(
                encoded, "paths", "/query/conformance:typed", "post", "responses", "200", "content", "application/json",
                "schema")
            #expect(Self.text(Self.at(int64, "required")) == #"["$integer"]"#)
            let encodedStore = Self.at(
                encoded, "paths", "/mutation/typed:store", "post", "responses", "200", "content", "application/json",
                "schema")
            #expect(Self.text(Self.at(encodedStore, "properties", "logo", "required")) == #"["$bytes"]"#)

            for response in [plain, cleanResponse, encodedResponse] {
                let (status, output) = try await Self.validate(response.body)
                #expect(status == 0, "openapi-spec-validator: \(output)")
            }
        }
    }

    @Test("functions refused by the denylist are absent from the document")
    func denylist() async throws {
        let deny = try FunctionPattern.list("typed:*")
        try await TestGateway.run(
            .inProcess,
            configure: { $0.access.functions.deny = deny }, adminKey: TypedInputTests.adminKey,
            functions: TypedInputTests.functions()
        ) { h in
            let doc = Self.parse(try await h.get("/openapi.yaml?functions=1").body)
            #expect(Self.at(doc, "paths", "/query/conformance:typed") != nil)
            #expect(Self.at(doc, "paths", "/mutation/typed:store") == nil)
            #expect(Self.at(doc, "paths", "/action/typed:choice") == nil)
        }
    }

    @Test("with an API key the document needs it, as the calls do, and still lists no denied function")
    func apiKey() async throws {
        let key = try Secret("gw-key-0123456789", source: "test")
        let deny = try FunctionPattern.list("typed:*")
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.access.apiKey = key
                $0.access.functions.deny = deny
            }, adminKey: TypedInputTests.adminKey, functions: TypedInputTests.functions()
        ) { h in
            for target in ["/openapi.yaml?functions=1", "/openapi.yaml?functions=true&format=clean"] {
                let missing = try await h.get(target)
                #expect(missing.status == 401, "\(target)")
                #expect(missing.errorCode == "InvalidAPIKey")
                #expect(!missing.text.contains("conformance:"), "nothing of the document")
                let wrong = try await h.get(target, headers: ["X-API-Key": "gw-key-0123456788"])
                #expect(wrong.status == 401, "\(target)")
            }
            #expect(try await h.request("HEAD", "/openapi.yaml?functions=1").status == 401)
            let document = try await h.get("/openapi.yaml?functions=1", headers: ["X-API-Key": "gw-key-0123456789"])
            #expect(document.status == 200)
            let doc = Self.parse(document.body)
            #expect(Self.at(doc, "paths", "/query/conformance:typed") != nil)
            #expect(Self.at(doc, "paths", "/mutation/typed:store") == nil)
            // The contract itself stays open (404 here, where no document is configured).
            #expect(try await h.get("/openapi.yaml").status == 404)
        }
    }

    @Test("the validator rejects a broken document (the check can fail)")
    func validatorRejects() async throws {
        let (status, _) = try await Self.validate(
            Array(#"{"openapi": "3.1.0", "paths": {"/x": {"get": {"responses": 5}}}}"#.utf8))
        #expect(status != 0)
    }
}
