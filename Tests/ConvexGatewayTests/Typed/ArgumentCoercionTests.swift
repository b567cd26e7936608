import ConvexGateway
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@Suite("Argument coercion by validator")
struct ArgumentCoercionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var validator: Validator
        var input: ConvexValue
        /// `nil` means an error is expected at `errorPath`.
        var expected: ConvexValue?
        var errorPath: String? = nil
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "whole number to int64", validator: .int64, input: .float64(81), expected: .int64(81)),
        Case(name: "negative zero to int64", validator: .int64, input: .float64(-0.0), expected: .int64(0)),
        Case(
            name: "2^53 - 1 to int64", validator: .int64, input: .float64(9_007_199_254_740_991),
            expected: .int64(9_007_199_254_740_991)),
        Case(
            name: "-(2^53 - 1) to int64", validator: .int64, input: .float64(-9_007_199_254_740_991),
            expected: .int64(-9_007_199_254_740_991)),
        // 9007199254740993 (2^53 + 1) reads as this float64: it may be either, so it is refused, never rounded.
        Case(
            name: "2^53 refused", validator: .int64, input: .float64(9_007_199_254_740_992), expected: nil,
            errorPath: ""),
        Case(
            name: "-2^53 refused", validator: .int64, input: .float64(-9_007_199_254_740_992), expected: nil,
            errorPath: ""),
        Case(name: "decimal string to int64", validator: .int64, input: "-9223372036854775808", expected: .int64(.min)),
        Case(name: "max decimal string", validator: .int64, input: "9223372036854775807", expected: .int64(.max)),
        Case(name: "int64 stays", validator: .int64, input: .int64(5), expected: .int64(5)),
        Case(name: "fraction refused", validator: .int64, input: .float64(1.5), expected: nil, errorPath: ""),
        Case(name: "past 2^53 refused", validator: .int64, input: .float64(1e19), expected: nil, errorPath: ""),
        Case(name: "NaN refused", validator: .int64, input: .float64(.nan), expected: nil, errorPath: ""),
        Case(
            name: "string out of range", validator: .int64, input: "9223372036854775808", expected: nil, errorPath: ""),
        Case(name: "non-decimal string", validator: .int64, input: "12abc", expected: nil, errorPath: ""),
        Case(name: "hex string refused", validator: .int64, input: "0x10", expected: nil, errorPath: ""),
        Case(name: "boolean left for the deployment", validator: .int64, input: true, expected: true),
        Case(name: "base64 to bytes", validator: .bytes, input: "AQID", expected: .bytes(Data([1, 2, 3]))),
        Case(name: "bad base64 refused", validator: .bytes, input: "not base64!", expected: nil, errorPath: ""),
        Case(name: "float64 untouched", validator: .float64, input: .float64(2), expected: .float64(2)),
        Case(name: "string untouched", validator: .string, input: "5", expected: "5"),
        Case(name: "any untouched", validator: .any, input: .float64(5), expected: .float64(5)),
        Case(
            name: "object fields", validator: .object(["x": .int64, "name": .string]),
            input: ["x": 3.0, "name": "7"], expected: ["x": .int64(3), "name": "7"]),
        Case(
            name: "extra field left alone", validator: .object(["x": .int64]),
            input: ["x": 3.0, "y": 4.0], expected: ["x": .int64(3), "y": 4.0]),
        Case(
            name: "optional field", validator: .object(["x": .optional(.int64)]),
            input: ["x": "12"], expected: ["x": .int64(12)]),
        Case(
            name: "array elements", validator: .array(.int64), input: [1.0, "2", .int64(3)],
            expected: [.int64(1), .int64(2), .int64(3)]),
        Case(
            name: "error path in nested array",
            validator: .object(["team": .object(["wins": .array(.int64)])]),
            input: ["team": ["wins": [1.0, 2.5]]], expected: nil, errorPath: ".team.wins[1]"),
        Case(
            name: "record values", validator: .record(keys: .string, values: .bytes), input: ["a": "AA=="],
            expected: ["a": .bytes(Data([0]))]),
        Case(
            name: "union: one branch accepts the coerced value", validator: .union([.int64, .string]),
            input: .float64(7), expected: .int64(7)),
        Case(
            name: "union: value already matches a branch", validator: .union([.int64, .string]), input: "7",
            expected: "7"),
        Case(
            name: "union with float64 leaves the number", validator: .union([.int64, .float64]), input: .float64(7),
            expected: .float64(7)),
        Case(
            name: "union: only the bytes branch can coerce", validator: .union([.int64, .bytes, .null]),
            input: "AQID", expected: .bytes(Data([1, 2, 3]))),
        Case(
            name: "union: branches agreeing on the coerced value",
            validator: .union([
                .object(["a": .int64]), .object(["a": .int64, "b": .optional(.int64)]),
            ]),
            input: ["a": 1.0], expected: ["a": .int64(1)]),
        Case(
            name: "union: two different coercions left alone", validator: .union([.int64, .bytes]), input: "1234",
            expected: "1234"),
        Case(
            name: "union: no branch after a failed coercion", validator: .union([.int64, .null]),
            input: .float64(1.5), expected: .float64(1.5)),
        Case(name: "int64 literal", validator: .literal(.int64(3)), input: .float64(3), expected: .int64(3)),
        Case(
            name: "other literal untouched", validator: .literal(.int64(3)), input: .float64(4), expected: .float64(4)),
    ]

    @Test("coerces by validator", arguments: cases)
    func coerce(_ c: Case) {
        do {
            let output = try ArgumentCoercion.coerce(arguments: c.input, validator: c.validator)
            #expect(c.expected == output, "\(c.name)")
        } catch {
            #expect(c.expected == nil, "\(c.name): unexpected error \(error)")
            #expect(error.path == c.errorPath, "\(c.name)")
        }
    }

    @Test("error message names the argument path")
    func errorNamesPath() {
        do {
            _ = try ArgumentCoercion.coerce(arguments: ["wins": 1.5], validator: .object(["wins": .int64]))
            Issue.record("1.5 was accepted as an int64")
        } catch {
            #expect(error.path == ".wins")
            #expect(error.description.hasPrefix("Argument 'wins': "))
        }
    }

    @Test("a JSON number past the safe integers is refused, naming the argument and asking for a decimal string")
    func roundedNumberRefused() throws {
        // What a client sends as {"wins": 9007199254740993}: the JSON reader's float64.
        let sent = try ConvexValue(plainJSON: Array(#"{"wins": 9007199254740993}"#.utf8))
        #expect(sent == ["wins": .float64(9_007_199_254_740_992)], "the digits a float64 loses")
        do {
            let coerced = try ArgumentCoercion.coerce(arguments: sent, validator: .object(["wins": .int64]))
            Issue.record("9007199254740993 became \(coerced)")
        } catch {
            #expect(error.path == ".wins")
            #expect(error.description.hasPrefix("Argument 'wins': "), "\(error)")
            #expect(error.description.contains("9007199254740992"), "\(error)")
            #expect(error.description.contains("send it as a decimal string"), "\(error)")
        }
        // As a decimal string it is exact.
        let exact = try ArgumentCoercion.coerce(
            arguments: ["wins": "9007199254740993"], validator: .object(["wins": .int64]))
        #expect(exact == ["wins": .int64(9_007_199_254_740_993)])
    }

    @Test("a decimal string out of int64's range says so, not that it should be sent as a decimal string")
    func decimalOutOfRange() {
        for text in ["99999999999999999999", "-9223372036854775809", "9223372036854775808"] {
            do {
                let coerced = try ArgumentCoercion.coerce(
                    arguments: ["x": .string(text)], validator: .object(["x": .int64]))
                Issue.record("\(text) became \(coerced)")
            } catch {
                #expect(error.description.contains("out of int64's range"), "\(error)")
                #expect(!error.description.contains("decimal string"), "\(error)")
            }
        }
    }

    @Test("reads the function spec's validator JSON")
    func readsSpec() throws {
        let json = #"""
            {"functions":[
             {"identifier":"teams.js:update","functionType":"Mutation","visibility":{"kind":"public"},
              "args":{"type":"object","value":{"team":{"fieldType":{"type":"object","value":{
                 "wins":{"fieldType":{"type":"bigint"},"optional":false},
                 "logo":{"fieldType":{"type":"bytes"},"optional":true}}},"optional":false}}},
              "returns":{"type":"union","value":[{"type":"null"},{"type":"id","tableName":"teams"}]}},
             {"identifier":"teams.js:secret","functionType":"Query","visibility":{"kind":"internal"},
              "args":{"type":"any"},"returns":{"type":"any"}},
             {"identifier":"http.js:route","functionType":"HttpAction","visibility":{"kind":"public"}}
            ]}
            """#
        let spec = try FunctionSpec(specJSON: ConvexValue(convexJSON: Array(json.utf8)))
        #expect(spec.functions.count == 2)
        let update = try #require(spec.publicFunction(UdfPath(parsing: "teams:update")))
        #expect(update.kind == .mutation)
        #expect(update.returns == .union([.null, .id("teams")]))
        #expect(spec.publicFunction(try UdfPath(parsing: "teams:secret")) == nil)
        let coerced = try spec.coerce(
            ["team": ["wins": 81.0, "logo": "AQ=="]], for: UdfPath(parsing: "teams.js:update"))
        #expect(coerced == ["team": ["wins": .int64(81), "logo": .bytes(Data([1]))]])
        // Unknown functions pass through.
        #expect(try spec.coerce(["x": 1.0], for: UdfPath(parsing: "other:fn")) == ["x": 1.0])
    }
}
