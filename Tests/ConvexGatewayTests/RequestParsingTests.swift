import ConvexValues
import Testing

@testable import ConvexGateway

@Suite struct FunctionPathTests {
    @Test(arguments: [
        ("messages:list", "messages", "list"),
        ("messages", "messages", "default"),
        ("dir/file:fn", "dir/file", "fn"),
        ("messages.js:list", "messages", "list"),
        ("a-b/c_d:_x1", "a-b/c_d", "_x1"),
    ])
    func accepts(text: String, module: String, function: String) throws {
        let path = try FunctionPath(parsing: text)
        #expect(path.module == module)
        #expect(path.function == function)
    }

    @Test(arguments: ["", ":list", "a::b", "../etc:passwd", "a//b:c", "a/./b:c", "a:1x", "a:b-c", "a b:c", "a:__", "a\u{0}:b", "é:x"])
    func rejects(text: String) {
        #expect {
            try FunctionPath(parsing: text)
        } throws: { error in
            (error as? GatewayError)?.status == 400 && (error as? GatewayError)?.code == .invalidFunctionPath
        }
    }
}

@Suite struct RequestArgumentsTests {
    @Test func queryParametersCoerceJSONLiteralsAndKeepOtherTextAsStrings() throws {
        let args = try RequestArguments.fromQuery([
            ("n", "5"), ("ok", "true"), ("none", "null"), ("name", "Bob"), ("code", "\"007\""),
            ("tags", "[\"a\",1]"), ("empty", ""), ("big", "{\"$integer\":\"BQAAAAAAAAA=\"}"), ("format", "clean"),
        ])
        #expect(
            args
                == .object([
                    "n": .float64(5), "ok": .boolean(true), "none": .null, "name": .string("Bob"),
                    "code": .string("007"), "tags": .array([.string("a"), .float64(1)]), "empty": .string(""),
                    "big": .int64(5),
                ]))
    }

    @Test func argsParameterTakesAJSONObject() throws {
        let args = try RequestArguments.fromQuery([("args", #"{"division":"AL Central","n":{"$integer":"AQAAAAAAAAA="}}"#)])
        #expect(args == .object(["division": .string("AL Central"), "n": .int64(1)]))
    }

    @Test(arguments: [
        ([("args", "[1]")], "Query parameter 'args' must be a JSON object of named arguments, not an array"),
        ([("args", "{")], "Query parameter 'args' is not valid JSON: Expected a field name in an object, found end of input (at $)"),
        ([("a", "1"), ("a", "2")], "Query parameter 'a' is given more than once"),
        ([("args", "{}"), ("a", "1")], "Use either args=<JSON object> or key=value parameters, not both"),
        ([("flag", nil)], "Query parameter 'flag' has no value; write flag=<value>"),
        ([("$x", "1")], "Query parameters: Field name \"$x\" starts with a '$', which is reserved (at $[\"$x\"])"),
    ] as [([(String, String?)], String)])
    func badQueryStringsAre400(items: [(String, String?)], message: String) {
        #expect {
            try RequestArguments.fromQuery(items.map { (name: $0.0, value: $0.1) })
        } throws: { error in
            guard let e = error as? GatewayError else { return false }
            return e.status == 400 && e.message == message
        }
    }

    @Test func bodyMustBeAnObjectAndEmptyMeansNoArguments() throws {
        #expect(try RequestArguments.fromBody([]) == .object([:]))
        #expect(try RequestArguments.fromBody(Array(" \n".utf8)) == .object([:]))
        #expect(try RequestArguments.fromBody(Array(#"{"wins":81}"#.utf8)) == .object(["wins": .float64(81)]))
        #expect(throws: GatewayError.self) { try RequestArguments.fromBody(Array("[1]".utf8)) }
        #expect(throws: GatewayError.self) { try RequestArguments.fromBody(Array("{\"a\":".utf8)) }
        let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        #expect(throws: GatewayError.self) { try RequestArguments.fromBody(Array("{\"a\":\(deep)}".utf8)) }
    }
}

@Suite struct ServerSentEventTests {
    @Test func dataLinesCannotBreakFraming() {
        let event = ServerSentEvent(event: "update\nevil", id: "7\r", data: Array("a\r\nb\rc\nd\u{0}data: x".utf8))
        #expect(String(decoding: event.encoded(), as: UTF8.self) == "event: updateevil\nid: 7\ndata: a\ndata: b\ndata: c\ndata: ddata: x\n\n")
    }

    @Test func comment() {
        #expect(String(decoding: ServerSentEvent.comment("hb"), as: UTF8.self) == ": hb\n\n")
    }
}

@Suite struct GatewayErrorBodyTests {
    @Test func oneBodyShape() {
        let error = GatewayError(status: 409, code: .convexError, message: "Team full", data: .object(["max": .int64(3)]))
        let body = String(decoding: error.body { $0.convexJSON() }, as: UTF8.self)
        #expect(body == #"{"error":{"code":"ConvexError","message":"Team full","data":{"max":{"$integer":"AwAAAAAAAAA="}}}}"#)
        #expect(String(decoding: GatewayError.internalError.body { $0.convexJSON() }, as: UTF8.self)
            == #"{"error":{"code":"InternalError","message":"Internal gateway error"}}"#)
    }
}
