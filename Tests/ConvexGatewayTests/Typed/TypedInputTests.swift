import Clocks
import ConvexGateway
import ConvexLocal
import ConvexValues
import Foundation
import TestSupport
import Testing

/// Typed inputs end to end: a real gateway fetching the function spec of a real local deployment with its admin key.
@Suite("Typed inputs from the function spec", .timeLimit(.minutes(5)))
struct TypedInputTests {
    static let adminKey = "typed-test-admin-key"

    /// Extra functions with bytes and nested int64 arguments, beside the demo functions.
    static func functions() -> FunctionRegistry {
        let registry = FunctionRegistry()
        registry.mutation(
            "typed:store",
            args: ["team": .object(["wins": .int64, "logo": .bytes, "tags": .optional(.array(.int64))])],
            returns: .object(["wins": .int64, "logo": .bytes, "tags": .optional(.array(.int64))])
        ) { _, args in args["team"] ?? .null }
        registry.action("typed:choice", args: ["v": .union([.int64, .boolean])]) { _, args in args["v"] ?? .null }
        return registry
    }

    @Test("plain JSON numbers reach an int64 argument, by body and by query string")
    func int64Argument() async throws {
        try await TestGateway.run(.inProcess, adminKey: Self.adminKey, functions: Self.functions()) { h in
            let posted = try await h.post("/query/conformance:typed", json: #"{"x": 81}"#)
            #expect(posted.status == 200, "\(posted.text)")
            #expect(posted.text == "81")
            let big = try await h.post("/query/conformance:typed", json: #"{"x": "9007199254740993"}"#)
            #expect(big.text == "9007199254740993")
            let clean = try await h.post("/query/conformance:typed?format=clean", json: #"{"x": -7, "tags": ["a"]}"#)
            #expect(clean.text == #""-7""#)
            let viaQuery = try await h.get("/query/conformance:typed?x=42")
            #expect(viaQuery.status == 200, "\(viaQuery.text)")
            #expect(viaQuery.text == "42")
            let union = try await h.post("/action/typed:choice", json: #"{"v": 3}"#)
            #expect(union.text == "3")
        }
    }

    @Test("a number that cannot be an int64 gets 400 naming the argument")
    func int64Refused() async throws {
        try await TestGateway.run(.inProcess, adminKey: Self.adminKey, functions: Self.functions()) { h in
            let fraction = try await h.post("/query/conformance:typed", json: #"{"x": 1.5}"#)
            #expect(fraction.status == 400)
            #expect(fraction.errorCode == "ArgumentValidationError")
            #expect(fraction.text.contains("'x'"), "\(fraction.text)")
            let range = try await h.post(
                "/mutation/typed:store", json: #"{"team": {"wins": "99999999999999999999", "logo": ""}}"#)
            #expect(range.status == 400)
            #expect(range.text.contains("'team.wins'"), "\(range.text)")
            let nested = try await h.post(
                "/mutation/typed:store", json: #"{"team": {"wins": 1, "logo": "", "tags": [1, 2.5]}}"#)
            #expect(nested.text.contains("'team.tags[1]'"), "\(nested.text)")
        }
    }

    @Test("no silent rounding: a JSON number past 2^53 - 1 is refused, a decimal string past int64 says out of range")
    func noSilentRounding() async throws {
        try await TestGateway.run(.inProcess, adminKey: Self.adminKey, functions: Self.functions()) { h in
            // 2^53 + 1 reads as 2^53 in a float64: refused, never stored rounded.
            for target in ["/query/conformance:typed", "/mutation/typed:store"] {
                let body =
                    target.hasPrefix("/query")
                    ? #"{"x": 9007199254740993}"# : #"{"team": {"wins": 9007199254740993, "logo": ""}}"#
                let rounded = try await h.post(target, json: body)
                #expect(rounded.status == 400, "\(target): \(rounded.text)")
                #expect(rounded.errorCode == "ArgumentValidationError")
                #expect(rounded.text.contains(target.hasPrefix("/query") ? "'x'" : "'team.wins'"), "\(rounded.text)")
                #expect(rounded.text.contains("send it as a decimal string"), "\(rounded.text)")
            }
            let largestSafe = try await h.post("/query/conformance:typed", json: #"{"x": 9007199254740991}"#)
            #expect(largestSafe.status == 200, "\(largestSafe.text)")
            #expect(largestSafe.text == "9007199254740991")
            let asText = try await h.post("/query/conformance:typed", json: #"{"x": "9007199254740993"}"#)
            #expect(asText.text == "9007199254740993")
            // In the query string the value was decimal text already: it is out of range, nothing else.
            let outOfRange = try await h.get("/query/conformance:typed?x=99999999999999999999")
            #expect(outOfRange.status == 400)
            #expect(outOfRange.errorCode == "ArgumentValidationError")
            #expect(outOfRange.text.contains("'x'"), "\(outOfRange.text)")
            #expect(outOfRange.text.contains("out of int64's range"), "\(outOfRange.text)")
            #expect(!outOfRange.text.contains("decimal string"), "\(outOfRange.text)")
            let inRange = try await h.get("/query/conformance:typed?x=9007199254740993")
            #expect(inRange.text == "9007199254740993")
        }
    }

    @Test("base64 strings reach a bytes argument; results render per output mode")
    func bytesArgument() async throws {
        try await TestGateway.run(.inProcess, adminKey: Self.adminKey, functions: Self.functions()) { h in
            let body = #"{"team": {"wins": 81, "logo": "AQID", "tags": [1, "2"]}}"#
            let plain = try await h.post("/mutation/typed:store", json: body)
            #expect(plain.status == 200, "\(plain.text)")
            #expect(plain.json == ["logo": "AQID", "tags": [1.0, 2.0], "wins": 81.0])
            let encoded = try await h.post("/mutation/typed:store?format=encoded", json: body)
            let value = try ConvexValue(convexJSON: encoded.body)
            #expect(value == ["logo": .bytes(Data([1, 2, 3])), "tags": [.int64(1), .int64(2)], "wins": .int64(81)])
            let badBase64 = try await h.post("/mutation/typed:store", json: #"{"team": {"wins": 1, "logo": "%%"}}"#)
            #expect(badBase64.status == 400)
            #expect(badBase64.text.contains("'team.logo'"), "\(badBase64.text)")
        }
    }

    @Test("a refused function answers as an unknown one, whatever its validators would say of the arguments")
    func refusedFunctionIsNeverTyped() async throws {
        let refused = FunctionFilter(deny: try! FunctionPattern.list("typed:*,conformance:*"))
        try await TestGateway.run(
            .inProcess,
            configure: { $0.access.functions = refused }, adminKey: Self.adminKey, functions: Self.functions()
        ) { h in
            // Arguments the validators refuse (an allowed function would get 400 naming 'team.wins' and 'x')…
            let posted = try await h.post("/mutation/typed:store", json: #"{"team": {"wins": 1.5, "logo": "%%"}}"#)
            #expect(posted.status == 404, "\(posted.text)")
            #expect(posted.errorCode == "FunctionNotFound")
            #expect(posted.text.contains("Could not find public function for 'typed:store'"), "\(posted.text)")
            let viaQuery = try await h.get("/query/conformance:typed?x=1.5")
            #expect(viaQuery.status == 404, "\(viaQuery.text)")
            #expect(viaQuery.errorCode == "FunctionNotFound")
            let batch = try await h.get("/query?q.a=conformance:typed&args.a=%7B%22x%22%3A1.5%7D")
            #expect(batch.json?["errors"]?["a"]?["code"] == .string("FunctionNotFound"), "\(batch.text)")
            // …as for a function the deployment does not have.
            let unknown = try await h.post("/mutation/absent:store", json: #"{"team": {"wins": 1.5}}"#)
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "FunctionNotFound")
        }
    }

    @Test("without an admin key arguments pass through as before")
    func withoutSpec() async throws {
        try await TestGateway.run(.inProcess, functions: Self.functions()) { h in
            let posted = try await h.post("/query/conformance:typed", json: #"{"x": 81}"#)
            #expect(posted.status == 400)
            #expect(posted.errorCode == "ArgumentValidationError")
            let wrapped = try await h.post("/query/conformance:typed", json: #"{"x": {"$integer": "UQAAAAAAAAA="}}"#)
            #expect(wrapped.text == "81")
            let document = try await h.get("/openapi.yaml?functions=1")
            #expect(document.status == 404)
        }
    }

    @Test("a function added after start is typed on its first call, after a refetch")
    func refreshOnDemand() async throws {
        let functions = Self.functions()
        let clock = TestClock<Duration>()
        try await TestGateway.run(
            .inProcess,
            configure: { $0.functionSpec?.minimumRefreshInterval = .seconds(2) }, adminKey: Self.adminKey,
            functions: functions, clock: GatewayClock(clock)
        ) { h in
            let first = try await h.post("/query/conformance:typed", json: #"{"x": 1}"#)
            #expect(first.status == 200)
            functions.mutation("typed:lateMutation", args: ["n": .int64]) { _, args in args["n"] ?? .null }
            await clock.advance(by: .milliseconds(2200))  // past the refresh interval since the first fetch
            // The first call fails validation upstream; the gateway refetches the spec and calls once more.
            let after = try await h.post("/mutation/typed:lateMutation", json: #"{"n": 5}"#)
            #expect(after.status == 200, "\(after.text)")
            #expect(after.text == "5")
            // Within the refresh interval the spec is not fetched again: the failure is answered as it is.
            functions.mutation("typed:tooSoon", args: ["n": .int64]) { _, args in args["n"] ?? .null }
            let tooSoon = try await h.post("/mutation/typed:tooSoon", json: #"{"n": 5}"#)
            #expect(tooSoon.status == 400)
        }
    }
}

/// The `convex-gateway` executable: the embedded deployment gets a random admin key, a configured key comes from the
/// environment or a file and never reaches the log.
@Suite("Typed inputs in the executable", .timeLimit(.minutes(5)))
struct TypedInputProcessTests {
    static func typedCall(_ gateway: GatewayProcess) async throws -> TestResponse {
        let port = gateway.port
        return try await blocking {
            try RawConnection.request(
                "POST", "/query/conformance:typed", port: port, headers: [:], body: Array(#"{"x": 81}"#.utf8))
        }
    }

    @Test("embedded deployment: typed inputs work with no configuration")
    func embedded() async throws {
        try await TestGateway.run(.process) { gateway in
            let response = try await Self.typedCall(gateway)
            #expect(response.status == 200, "\(response.text)")
            #expect(response.text == "81")
        }
    }

    @Test("admin key from a file: used for the spec, never logged")
    func keyFile() async throws {
        let key = "typed-key-\(UUID().uuidString)"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("admin-key-\(UUID().uuidString)")
        try Data((key + "\n").utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await TestGateway.run(.process, environment: ["CONVEX_ADMIN_KEY_FILE": file.path, "LOG_LEVEL": "trace"]) {
            gateway in
            let response = try await Self.typedCall(gateway)
            #expect(response.text == "81")
            let document = try await blocking {
                try RawConnection.request("GET", "/openapi.yaml?functions=1", port: gateway.port)
            }
            #expect(document.status == 200)
            #expect(gateway.log.contains("function spec fetched"))
            #expect(!gateway.log.contains(key))
        }
    }
}
