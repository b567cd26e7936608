import Foundation
import Testing

@testable import ConvexValues

/// Encodings observed from the official client (reference §1.2).
@Suite struct ConvexJSONCoreTests {
    @Test(arguments: [
        (ConvexValue.int64(5), #"{"$integer":"BQAAAAAAAAA="}"#),
        (.int64(-1), #"{"$integer":"//////////8="}"#),
        (.int64(-2), #"{"$integer":"/v////////8="}"#),
        (.int64(7), #"{"$integer":"BwAAAAAAAAA="}"#),
        (.float64(.nan), #"{"$float":"AAAAAAAA+H8="}"#),
        (.float64(.infinity), #"{"$float":"AAAAAAAA8H8="}"#),
        (.float64(-.infinity), #"{"$float":"AAAAAAAA8P8="}"#),
        (.float64(-0.0), #"{"$float":"AAAAAAAAAIA="}"#),
        (.bytes(Data([0x00, 0x01, 0xFF])), #"{"$bytes":"AAH/"}"#),
        (.bytes(Data("hi".utf8)), #"{"$bytes":"aGk="}"#),
        (.float64(1), "1.0"),
        (.float64(1.5), "1.5"),
        (.string("x\"\n\u{1}é"), #""x\"\n\u0001é""#),
        (ConvexValue.object(["b": 1.0, "a": [true, nil]]), #"{"a":[true,null],"b":1.0}"#),
    ])
    func encodesLikeTheOfficialClient(value: ConvexValue, json: String) throws {
        #expect(value.convexJSONString == json)
        #expect(try ConvexValue(convexJSON: json) == value)
    }

    @Test func numbersAreFloat64AndKeepNegativeZero() throws {
        #expect(try ConvexValue(convexJSON: "3") == .float64(3))
        #expect(try ConvexValue(convexJSON: "3.0") == .float64(3))
        #expect(try ConvexValue(convexJSON: "-0") == .float64(-0.0))
        #expect(try ConvexValue(convexJSON: "12345678901234567890") == .float64(1.2345678901234567e19))
        #expect(try ConvexValue(convexJSON: #"{"$bytes":"AQ"}"#) == .bytes(Data([1])))
    }

    @Test(arguments: [
        (
            #"{"$float":"AAAAAAAA+D8="}"#, ConvexValueError.Code.invalidFloat64, "$",
            "Float64 1.5 should be encoded as a number"
        ),
        (#"{"a":[{"$integer":"AQ=="}]}"#, .invalidInt64, "$.a[0]", "Int64 must be exactly eight bytes"),
        (#"{"x":{"$bytes":"-_8="}}"#, .invalidBytes, "$.x", "Invalid $bytes: expected a standard base64 string"),
        (
            #"{"s":{"$set":[]}}"#, .retiredType, "$.s",
            "Received a Set which is no longer supported as a Convex type, with values: []"
        ),
        (#"{"$foo":1}"#, .invalidFieldName, "$[\"$foo\"]", "Field name \"$foo\" starts with a '$', which is reserved"),
        (#"{"a":1,"a":2}"#, .duplicateField, "$.a", "Duplicate field name \"a\" in an object"),
        ("[1,]", .invalidJSON, "$[1]", "Unexpected ']' at byte 3 in JSON"),
    ])
    func rejectsWithPath(json: String, code: ConvexValueError.Code, path: String, message: String) {
        #expect {
            try ConvexValue(convexJSON: json)
        } throws: { error in
            guard let e = error as? ConvexValueError else { return false }
            return e.code == code && e.path == path && e.message == message
        }
    }

    @Test func nestingLimit() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try ConvexValue(convexJSON: ok).nestingDepth == 64)
        let wrapped =
            String(repeating: "[", count: 64) + #"{"$integer":"AQAAAAAAAAA="}"# + String(repeating: "]", count: 64)
        #expect(try ConvexValue(convexJSON: wrapped).nestingDepth == 64)
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: ConvexValueError.self) { try ConvexValue(convexJSON: deep) }
        let deepObject = String(repeating: "[", count: 64) + "{}" + String(repeating: "]", count: 64)
        #expect(throws: ConvexValueError.self) { try ConvexValue(convexJSON: deepObject) }
    }
}

@Suite struct EnvelopeTests {
    @Test func envelopeSkipsLimitsButCheckLimitsFindsThem() throws {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        let envelope = try ConvexValue(
            envelopeJSON: Array(#"{"type":"QueryUpdated","value":"#.utf8) + Array(deep.utf8) + Array("}".utf8))
        let value = try #require(envelope["value"])
        #expect(value.nestingDepth == 65)
        #expect(throws: ConvexValueError.self) { try value.checkLimits() }
        let ok = try ConvexValue(convexJSON: String(repeating: "[", count: 64) + String(repeating: "]", count: 64))
        try ok.checkLimits()
    }
}
