import ConvexLocal
import ConvexValues
import Foundation
import Logging
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP functions API (reference §3) over real HTTP.
@Suite(.timeLimit(.minutes(5)))
struct HTTPAPITests {
    static let adminKey = "http-admin"

    struct Reply {
        var status: Int
        var body: String
        var json: ConvexValue? { try? ConvexValue(plainJSON: Array(body.utf8)) }
    }

    func send(
        _ deployment: LocalDeployment, _ method: String, _ path: String, body: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> Reply {
        var request = URLRequest(url: URL(string: deployment.url + path)!)
        request.httpMethod = method
        if let body { request.httpBody = Data(body.utf8) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return Reply(
            status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self))
    }

    func withDeployment(_ body: (LocalDeployment) async throws -> Void) async throws {
        var logger = Logger(label: "convex-local-test")
        logger.logLevel = .error
        try await withLocalDeployment(.init(port: 0, adminKey: Self.adminKey), logger: logger, body)
    }

    static let echoArgs =
        #"{"a":{"$integer":"BQAAAAAAAAA="},"b":{"$bytes":"AAH/"},"n":{"$float":"AAAAAAAA+H8="},"z":{"$float":"AAAAAAAAAIA="},"f":3}"#

    @Test func formatsFollowTheFormatFieldAndTheClientHeader() async throws {
        try await withDeployment { d in
            let clean = try await send(d, "POST", "/api/query", body: #"{"path":"echo:echo","args":\#(Self.echoArgs)}"#)
            #expect(clean.status == 200)
            #expect(clean.body == #"{"status":"success","value":{"a":"5","b":"AAH/","f":3.0,"n":"NaN","z":-0.0}}"#)
            let encoded = try await send(
                d, "POST", "/api/query",
                body: #"{"path":"echo:echo","format":"convex_encoded_json","args":\#(Self.echoArgs)}"#)
            #expect(
                encoded.body
                    == #"{"status":"success","value":{"a":{"$integer":"BQAAAAAAAAA="},"b":{"$bytes":"AAH/"},"f":3.0,"n":{"$float":"AAAAAAAA+H8="},"z":{"$float":"AAAAAAAAAIA="}}}"#
            )
            let export = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","format":"export_json","args":\#(Self.echoArgs)}"#)
            #expect(
                export.body
                    == #"{"status":"success","value":{"a":5,"b":{"$bytes":"AAH/"},"f":3.0,"n":{"$float":"AAAAAAAA+H8="},"z":-0.0}}"#
            )
            let oldPython = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{"a":{"$integer":"BQAAAAAAAAA="}}}"#,
                headers: ["Convex-Client": "python-0.5.0"])
            #expect(oldPython.body == #"{"status":"success","value":{"a":{"$integer":"BQAAAAAAAAA="}}}"#)
            let newPython = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{"a":{"$integer":"BQAAAAAAAAA="}}}"#,
                headers: ["Convex-Client": "python-0.8.1"])
            #expect(newPython.body == #"{"status":"success","value":{"a":"5"}}"#)
            let legacyAlias = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","format":"convex_json","args":{"t":true}}"#)
            #expect(legacyAlias.body == #"{"status":"success","value":{"t":true}}"#)
        }
    }

    @Test func endpointsAndEnvelope() async throws {
        try await withDeployment { d in
            let mutation = try await send(
                d, "POST", "/api/mutation", body: #"{"path":"mlb:record_win","args":{"team":"Padres"},"format":"json"}"#
            )
            #expect(mutation.json?["status"] == "success")
            #expect(mutation.json?["value"]?["wins"] == "82")
            #expect(mutation.json?["logLines"] == [#"[LOG] 'recorded a win for "Padres"'"#])
            let action = try await send(
                d, "POST", "/api/action", body: #"{"path":"conformance:add","args":{"a":1,"b":2}}"#)
            #expect(action.json?["value"] == 3.0)
            let run = try await send(
                d, "POST", "/api/run/mlb/first_place_team", body: #"{"args":{"division":"NL West"}}"#)
            #expect(run.json?["value"]?["name"] == "Dodgers")
            let runMutation = try await send(d, "POST", "/api/run/messages/send", body: #"{"args":{"body":"via run"}}"#)
            #expect(runMutation.json?["status"] == "success")
            let get = try await send(
                d, "GET", "/api/query?path=mlb:teams&args=%7B%22division%22:%22NL%20West%22%7D&format=json")
            #expect(get.json?["value"]?[1]?["name"] == "Padres")
            let batch = try await send(
                d, "POST", "/api/query_batch",
                body:
                    #"{"queries":[{"path":"mlb:first_place_team","args":{"division":"AL East"}},{"path":"nope:x","args":{}}]}"#
            )
            #expect(batch.json?["results"]?[0]?["value"]?["name"] == "Orioles")
            #expect(batch.json?["results"]?[1]?["status"] == "error")
            let ts = try await send(d, "POST", "/api/query_ts")
            #expect(ts.json?["ts"] != nil)
            // No logLines key when there are none.
            let quiet = try await send(d, "POST", "/api/query", body: #"{"path":"logs:list","args":{}}"#)
            #expect(!quiet.body.contains("logLines"))
        }
    }

    @Test func functionErrorsAre200WithStatusError() async throws {
        try await withDeployment { d in
            let convexError = try await send(
                d, "POST", "/api/mutation",
                body:
                    #"{"path":"conformance:convexError","args":{"data":{"n":{"$integer":"AQAAAAAAAAA="}}},"format":"convex_encoded_json"}"#
            )
            #expect(convexError.status == 200)
            #expect(convexError.json?["status"] == "error")
            #expect(convexError.json?["errorData"] == ["n": .int64(1)])
            let cleanData = try await send(
                d, "POST", "/api/mutation",
                body: #"{"path":"conformance:convexError","args":{"data":{"n":{"$integer":"AQAAAAAAAAA="}}}}"#)
            #expect(cleanData.json?["errorData"] == ["n": "1"], "errorData uses the response format")
            let plain = try await send(
                d, "POST", "/api/query", body: #"{"path":"conformance:plainErrorQuery","args":{}}"#)
            #expect(plain.status == 200 && plain.json?["errorData"] == nil)
            if case .string(let message)? = plain.json?["errorMessage"] {
                #expect(message.hasPrefix("[Request ID: ") && message.hasSuffix("] Server Error\nUncaught Error: boom"))
            } else {
                Issue.record(Comment(rawValue: plain.body))
            }
            let missing = try await send(d, "POST", "/api/query", body: #"{"path":"nope:fn","args":{}}"#)
            #expect(missing.status == 200 && missing.json?["status"] == "error")
            let invalid = try await send(
                d, "POST", "/api/query", body: #"{"path":"conformance:typed","args":{"x":"s"}}"#)
            if case .string(let message)? = invalid.json?["errorMessage"] {
                #expect(
                    message.contains(
                        "ArgumentValidationError: Value does not match validator.\nPath: .x\nValue: \"s\"\nValidator: v.int64()"
                    ))
            } else {
                Issue.record(Comment(rawValue: invalid.body))
            }
        }
    }

    @Test(arguments: [
        ("/api/query", #"{"path":"echo:echo","format":"yaml"}"#, 400, "BadFormat"),
        ("/api/query", "{oops", 400, "BadJsonBody"),
        ("/api/query", "[]", 400, "BadJsonBody"),
        ("/api/query", #"{"args":{}}"#, 400, "BadJsonBody"),
        ("/api/query", #"{"path":"m.ts:f"}"#, 400, "BadConvexModuleIdentifier"),
        ("/api/query", #"{"path":"echo:echo","args":5}"#, 400, "InvalidArgs"),
        ("/api/run/onlyone", #"{"args":{}}"#, 400, "MissingIdentifier"),
        ("/api/query", String(repeating: "[", count: 100_000), 400, "BadJsonBody"),
    ])
    func badRequests(path: String, body: String, status: Int, code: String) async throws {
        try await withDeployment { d in
            let reply = try await send(d, "POST", path, body: body)
            #expect(reply.status == status, "\(reply.body)")
            #expect(reply.json?["code"] == .string(code), "\(reply.body)")
            #expect(reply.json?["message"] != nil)
        }
    }

    @Test func oversizeArgumentsAreRejected() async throws {
        try await withDeployment { d in
            let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
            let reply = try await send(d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{"x":\#(deep)}}"#)
            #expect(reply.status == 400)
            #expect(reply.json?["code"] == "TooNestedError", "\(reply.body)")
            let huge = String(repeating: "a", count: (16 << 20) + 4000)
            let tooBig = try await send(d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{"x":"\#(huge)"}}"#)
            #expect(tooBig.status == 413)
            // Still serving.
            let ok = try await send(
                d, "POST", "/api/query", body: #"{"path":"mlb:first_place_team","args":{"division":"AL Central"}}"#)
            #expect(ok.json?["value"]?["name"] == "Guardians")
        }
    }

    @Test func authorizationHeaders() async throws {
        try await withDeployment { d in
            let payload = Data(#"{"sub":"u9","iss":"iss.example","name":"Zed"}"#.utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(
                    of: "/", with: "_")
            let user = try await send(
                d, "POST", "/api/query", body: #"{"path":"conformance:whoami","args":{}}"#,
                headers: ["Authorization": "Bearer eyJhbGciOiJub25lIn0.\(payload).sig"])
            #expect(user.json?["value"]?["identity"]?["tokenIdentifier"] == "iss.example|u9")
            let admin = try await send(
                d, "POST", "/api/query", body: #"{"path":"conformance:internalQuery","args":{}}"#,
                headers: ["Authorization": "Convex \(Self.adminKey)"])
            #expect(admin.json?["value"] == "internal ok")
            let noAdmin = try await send(
                d, "POST", "/api/query", body: #"{"path":"conformance:internalQuery","args":{}}"#)
            #expect(noAdmin.json?["status"] == "error")
            let badKey = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{}}"#,
                headers: ["Authorization": "Convex nope"])
            #expect(badKey.status == 401 && badKey.json?["code"] == "BadAdminKey")
            let badJWT = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{}}"#,
                headers: ["Authorization": "Bearer x"])
            #expect(badJWT.status == 401)
            let badScheme = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{}}"#,
                headers: ["Authorization": "Basic abc"])
            #expect(badScheme.status == 400)
            let badClient = try await send(
                d, "POST", "/api/query", body: #"{"path":"echo:echo","args":{}}"#, headers: ["Convex-Client": "nodash"])
            #expect(badClient.status == 400 && badClient.json?["code"] == "InvalidClientVersion")
            let function = try await send(
                d, "POST", "/api/function", body: #"{"path":"conformance:internalMutation","args":{}}"#,
                headers: ["Authorization": "Convex \(Self.adminKey)"])
            #expect(function.json?["value"] == "internal mutation ok")
            let functionNoAdmin = try await send(d, "POST", "/api/function", body: #"{"path":"echo:echo","args":{}}"#)
            #expect(functionNoAdmin.status == 403)
        }
    }

    @Test func functionSpecListsValidators() async throws {
        try await withDeployment { d in
            let denied = try await send(d, "GET", "/api/function_spec")
            #expect(denied.status == 403)
            let spec = try await send(
                d, "GET", "/api/function_spec", headers: ["Authorization": "Convex \(Self.adminKey)"])
            guard case .array(let functions)? = spec.json?["functions"] else {
                Issue.record(Comment(rawValue: spec.body)); return
            }
            let first = functions.first { $0["identifier"] == "mlb.js:first_place_team" }
            #expect(first?["functionType"] == "Query")
            #expect(first?["visibility"] == ["kind": "public"])
            #expect(
                first?["args"] == [
                    "type": "object", "value": ["division": ["fieldType": ["type": "string"], "optional": false]],
                ])
            let typed = functions.first { $0["identifier"] == "conformance.js:typed" }
            #expect(typed?["returns"] == ["type": "bigint"])
            #expect(
                typed?["args"]?["value"]?["tags"] == [
                    "fieldType": ["type": "array", "value": ["type": "string"]], "optional": true,
                ])
            #expect(
                functions.first { $0["identifier"] == "conformance.js:internalQuery" }?["visibility"] == [
                    "kind": "internal"
                ])
        }
    }
}
