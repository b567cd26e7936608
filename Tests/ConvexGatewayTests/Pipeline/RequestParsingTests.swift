import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

@Suite struct RouteParsingTests {
    @Test(arguments: [
        ("messages:list", "messages", "list"),
        ("messages", "messages", "default"),
        ("dir/file:fn", "dir/file", "fn"),
        ("messages.js:list", "messages", "list"),
        ("a-b/c_d:_x1", "a-b/c_d", "_x1"),
    ])
    func accepts(text: String, module: String, function: String) throws {
        let path = try UdfPath(parsing: text)
        #expect(path.module == module)
        #expect(path.function == function)
        let route = try Route(rawPath: "/query/\(text)"[...])
        #expect(route.template == Route.queryTemplate && route.function == path)
    }

    /// The route table: one row per template, each found by its own path with its own access class, and a path that
    /// only starts like a fixed one is not it.
    @Test func everyRowOfTheTableIsFoundByItsPath() throws {
        #expect(Set(Route.table.map(\.template)).count == Route.table.count)
        for row in Route.table {
            let path = row.takesFunction ? row.path + "messages:list" : row.path
            let route = try Route(rawPath: path[...])
            #expect(route.template == row.template)
            #expect(route.function == (row.takesFunction ? try UdfPath(parsing: "messages:list") : nil))
            #expect(Route.accessClass(rawPath: path[...]) == row.access)
        }
        #expect(try Route(rawPath: "/query"[...]).template == "/query")
        #expect(throws: GatewayError.self) { try Route(rawPath: "/healthzz"[...]) }
        #expect(Route.accessClass(rawPath: "/nothing"[...]) == .keyed)
    }

    @Test(arguments: [
        "", ":list", "a::b", "../etc:passwd", "a//b:c", "a/./b:c", "a:1x", "a:b-c", "a b:c", "a:__", "a\u{0}:b", "é:x",
        "m.ts:f", "a:", String(repeating: "m", count: 1020), String(repeating: "m", count: 1025),
    ])
    func rejects(text: String) {
        #expect(throws: UdfPathError.self) { try UdfPath(parsing: text) }
        #expect {
            try Route(rawPath: "/subscribe/\(text)"[...])
        } throws: { error in
            (error as? GatewayError)?.status == 400 && (error as? GatewayError)?.code == .invalidFunctionPath
        }
    }
}

@Suite struct ArgumentStageTests {
    static func query(_ items: [(String, String?)]) -> QueryString {
        QueryString(items.map { QueryString.Parameter(name: $0.0, value: $0.1) })
    }

    @Test func withoutASpecJSONLiteralsAreGuessedAndOtherTextStaysAString() throws {
        let args = try ArgumentStage.fromQuery(
            Self.query([
                ("n", "5"), ("ok", "true"), ("none", "null"), ("name", "Bob"), ("code", "\"007\""),
                ("tags", "[\"a\",1]"), ("empty", ""), ("big", "{\"$integer\":\"BQAAAAAAAAA=\"}"), ("format", "clean"),
            ]))
        #expect(
            args
                == .object([
                    "n": .float64(5), "ok": .boolean(true), "none": .null, "name": .string("Bob"),
                    "code": .string("007"), "tags": .array([.string("a"), .float64(1)]), "empty": .string(""),
                    "big": .int64(5),
                ]))
    }

    /// The spec is consulted before anything is guessed: a string argument gets the text as sent.
    @Test func theFunctionSpecDecidesWhatEachParameterIs() throws {
        let validator = Validator.object([
            "division": .string, "zip": .string, "id": .id("teams"),
            "wins": .float64, "n": .int64, "big": .int64, "ok": .boolean,
            "tags": .array(.string), "team": .object(["name": .string]),
            "either": .union([.string, .float64]), "raw": .bytes, "free": .any,
        ])
        let args = try ArgumentStage.fromQuery(
            Self.query([
                ("division", "12345"), ("zip", "02139"), ("id", "true"), ("wins", "81"), ("n", "-7"),
                ("big", "9007199254740993"), ("ok", "false"), ("tags", #"["a","b"]"#), ("team", #"{"name":"x"}"#),
                ("either", "12"), ("raw", "AQI="), ("free", "3"), ("unknown", "4"),
            ]), validator: validator)
        #expect(
            args
                == .object([
                    "division": .string("12345"), "zip": .string("02139"), "id": .string("true"),
                    "wins": .float64(81), "n": .string("-7"), "big": .string("9007199254740993"),
                    "ok": .boolean(false), "tags": .array([.string("a"), .string("b")]),
                    "team": .object(["name": .string("x")]), "either": .string("12"), "raw": .string("AQI="),
                    "free": .float64(3), "unknown": .float64(4),
                ]))
        // Then ArgumentCoercion makes the int64 and bytes values exact.
        let typed = try ArgumentCoercion.coerce(arguments: args, validator: validator)
        #expect(typed["n"] == .int64(-7))
        #expect(typed["big"] == .int64(9_007_199_254_740_993))
        #expect(typed["raw"] == .bytes(Data([1, 2])))
    }

    @Test func textAValidatorCannotReadIsLeftForTheDeploymentToRefuse() {
        let validator = Validator.object(["wins": .float64, "ok": .boolean])
        #expect(
            (try? ArgumentStage.fromQuery(Self.query([("wins", "many"), ("ok", "yes")]), validator: validator))
                == .object(["wins": .string("many"), "ok": .string("yes")]))
    }

    @Test func argsParameterTakesAJSONObject() throws {
        let args = try ArgumentStage.fromQuery(
            Self.query([("args", #"{"division":"AL Central","n":{"$integer":"AQAAAAAAAAA="}}"#)]))
        #expect(args == .object(["division": .string("AL Central"), "n": .int64(1)]))
    }

    @Test(
        arguments: [
            ([("args", "[1]")], "Query parameter 'args' must be a JSON object of named arguments, not an array"),
            (
                [("args", "{")],
                "Query parameter 'args' is not valid JSON: Expected a field name in an object, found end of input (at $)"
            ),
            ([("a", "1"), ("a", "2")], "Query parameter 'a' is given more than once"),
            ([("args", "{}"), ("a", "1")], "Use either args=<JSON object> or key=value parameters, not both"),
            ([("flag", nil)], "Query parameter 'flag' has no value; write flag=<value>"),
            ([("$x", "1")], "Query parameters: Field name \"$x\" starts with a '$', which is reserved (at $[\"$x\"])"),
        ] as [([(String, String?)], String)])
    func badQueryStringsAre400(items: [(String, String?)], message: String) {
        #expect {
            try ArgumentStage.fromQuery(Self.query(items))
        } throws: { error in
            guard let e = error as? GatewayError else { return false }
            return e.status == 400 && e.message == message
        }
    }

    @Test func bodyMustBeAnObjectAndEmptyMeansNoArguments() throws {
        func body(_ text: String) throws -> ConvexValue {
            guard case .body(let value) = try ArgumentStage.input(fromBody: Array(text.utf8)) else { return .null }
            return value
        }
        #expect(try body("") == .object([:]))
        #expect(try body(" \n") == .object([:]))
        #expect(try body(#"{"wins":81}"#) == .object(["wins": .float64(81)]))
        #expect(throws: GatewayError.self) { try body("[1]") }
        #expect(throws: GatewayError.self) { try body("{\"a\":") }
        let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        #expect(throws: GatewayError.self) { try body("{\"a\":\(deep)}") }
    }
}

@Suite struct ServerSentEventTests {
    @Test func dataLinesCannotBreakFraming() {
        let event = ServerSentEvent(event: "update\nevil", id: "7\r", data: Array("a\r\nb\rc\nd\u{0}data: x".utf8))
        #expect(
            String(decoding: event.encoded(), as: UTF8.self)
                == "event: updateevil\nid: 7\ndata: a\ndata: b\ndata: c\ndata: ddata: x\n\n")
        // One line, copied as it is; a NUL alone is still dropped.
        #expect(
            String(decoding: ServerSentEvent(data: Array(#"{"a":"b\nc"}"#.utf8)).encoded(), as: UTF8.self)
                == "data: {\"a\":\"b\\nc\"}\n\n")
        #expect(String(decoding: ServerSentEvent(data: [0x61, 0, 0x62]).encoded(), as: UTF8.self) == "data: ab\n\n")
    }

    @Test func comment() {
        #expect(String(decoding: ServerSentEvent.comment("hb"), as: UTF8.self) == ": hb\n\n")
    }
}

@Suite struct GatewayErrorBodyTests {
    @Test func everyCodeHasOneStatusFromTheTable() {
        for code in GatewayError.Code.allCases {
            #expect((400...599).contains(code.status), "\(code)")
            #expect(GatewayError(code: code, message: "m").status == code.status)
        }
        #expect(GatewayError.Code.convexError.status == 422)
        #expect(GatewayError.Code.invalidTimestamp.status == 400)
        #expect(GatewayError.Code.upstreamTimeout.status == 504)
        #expect(Set(GatewayError.Code.allCases.map(\.rawValue)).count == GatewayError.Code.allCases.count)
    }

    @Test func oneBodyShape() {
        let error = GatewayError(
            code: .convexError, message: "Team full", data: .object(["max": .int64(3)]))
        let body = String(decoding: error.body { $0.convexJSON() }, as: UTF8.self)
        #expect(
            body
                == #"{"error":{"code":"ConvexError","message":"Team full","data":{"max":{"$integer":"AwAAAAAAAAA="}}}}"#
        )
        #expect(
            String(decoding: GatewayError.internalError.body { $0.convexJSON() }, as: UTF8.self)
                == #"{"error":{"code":"InternalError","message":"Internal gateway error"}}"#)
    }
}

struct QueryStringTests {
    @Test(arguments: [
        ("a=1&b=%C3%A9", true), ("args=%7B%22a%22%3A1%7D", true), ("p=a+b", true), ("", true), ("a&&b=", true),
        ("a=%FF", false), ("%C0%AF=1", false), ("t=%E2%82", false), ("ok=1&bad=%ED%A0%80", false),
        ("x=%zz", false), ("y=%", false), ("z=%4", false),
    ])
    func acceptsOnlyUTF8(query: String, valid: Bool) {
        #expect(((try? QueryString(raw: query[...])) != nil) == valid, "\(query)")
    }

    @Test func decodesOnceWithPlusAsSpace() throws {
        let query = try QueryString(raw: "division=AL+Central&zip=02139&flag&e=%25%2B&=v")
        #expect(
            query.parameters == [
                .init(name: "division", value: "AL Central"), .init(name: "zip", value: "02139"),
                .init(name: "flag", value: nil), .init(name: "e", value: "%+"), .init(name: "", value: "v"),
            ])
    }

    @Test func namesTheParameter() throws {
        #expect {
            try QueryString(raw: "good=1&bad=%FF")
        } throws: { error in
            guard let error = error as? GatewayError else { return false }
            return error.status == 400 && error.code == .invalidArguments && error.message.contains("'bad'")
                && error.message.contains("UTF-8")
        }
        #expect {
            try QueryString(raw: "good=1&odd=%zz")
        } throws: { error in
            (error as? GatewayError)?.message.contains("'odd' has a malformed percent-escape") == true
        }
    }
}
