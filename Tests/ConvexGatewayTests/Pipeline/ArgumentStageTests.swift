import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

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

    /// 9007199254740993 reads as the float64 9007199254740992: the refusal quotes what the client wrote.
    @Test(arguments: [
        (#"{"n": 9007199254740993, "label": "9007199254740992"}"#, "9007199254740993"),
        (#"{"n": -9007199254740993}"#, "-9007199254740993"),
        (#"{"n": 9007199254740992}"#, "9007199254740992"),
        // Two different texts read as the same number: which one is refused cannot be told, so the number as read.
        (#"{"n": 9007199254740993, "m": 9007199254740992}"#, "9007199254740992"),
    ])
    func aNumberBeyondTheSafeIntegersIsQuotedAsSent(body: String, quoted: String) throws {
        let spec = FunctionSpec(functions: [
            .init(
                path: "m:f", kind: .mutation, isPublic: true, args: .object(["n": .int64, "m": .any, "label": .any]),
                returns: .any)
        ])
        let input = try ArgumentStage.input(fromBody: Array(body.utf8))
        #expect {
            try ArgumentStage.arguments(input, for: UdfPath(parsing: "m:f"), spec: spec)
        } throws: { error in
            guard let e = error as? GatewayError else { return false }
            return e.message == "Argument 'n': " + ArgumentCoercion.beyondSafeIntegers(quoted)
        }
    }

    @Test func bodyMustBeAnObjectAndEmptyMeansNoArguments() throws {
        func body(_ text: String) throws -> ConvexValue {
            guard case .body(let value, _) = try ArgumentStage.input(fromBody: Array(text.utf8)) else { return .null }
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
