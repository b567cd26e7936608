import Foundation
import Testing

@testable import ConvexValues

/// Every way Convex JSON is rejected, with the error the value parser and the transcoder both report.
@Suite struct RejectionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let json: [UInt8]
        let code: ConvexValueError.Code
        let path: String
        let message: String
        init(_ json: String, _ code: ConvexValueError.Code, _ path: String, _ message: String) {
            self.init(bytes: Array(json.utf8), code, path, message)
        }
        init(bytes: [UInt8], _ code: ConvexValueError.Code, _ path: String, _ message: String) {
            json = bytes
            self.code = code
            self.path = path
            self.message = message
        }
        var testDescription: String { "\(code): \(String(decoding: json.prefix(60), as: UTF8.self))" }
    }

    static let longKey = String(repeating: "k", count: ConvexLimits.maxFieldNameLength + 1)

    static let cases: [Case] = [
        // JSON syntax
        Case("", .invalidJSON, "$", "Unexpected end of JSON input"),
        Case("[1,]", .invalidJSON, "$[1]", "Unexpected ']' at byte 3 in JSON"),
        Case("[1 2]", .invalidJSON, "$", "Expected ',' or ']' in an array, found '2' at byte 3"),
        Case(#"{"a" 1}"#, .invalidJSON, "$", "Expected ':' after a field name, found '1' at byte 5"),
        Case(#"{"a":1 "b":2}"#, .invalidJSON, "$", "Expected ',' or '}' in an object, found '\"' at byte 7"),
        Case("{1:2}", .invalidJSON, "$", "Expected a field name in an object, found '1' at byte 1"),
        Case(#"{"a":[true"#, .invalidJSON, "$.a", "Unexpected end of JSON input in an array"),
        Case("tru", .invalidJSON, "$", "Unexpected 't' at byte 0 in JSON"),
        Case("[1] x", .invalidJSON, "$", "Unexpected data after the JSON value at byte 4"),
        Case(#"{"s":"abc"#, .invalidJSON, "$.s", "Unterminated string"),
        Case("[\"a\u{1}\"]", .invalidJSON, "$[0]", "Control character in a string at byte 3"),
        Case(#"["\x"]"#, .invalidJSON, "$[0]", "Invalid escape '\\x' in a string"),
        Case(#""\u12""#, .invalidJSON, "$", "Truncated \\u escape in a string"),
        Case(#""\uZZZZ""#, .invalidJSON, "$", "Invalid \\u escape in a string"),
        Case("01", .invalidJSON, "$", "Invalid number (leading zero) at byte 0"),
        Case("-", .invalidJSON, "$", "Invalid number at byte 0"),
        Case("[1.]", .invalidJSON, "$[0]", "Invalid number at byte 1"),
        Case("1e", .invalidJSON, "$", "Invalid number at byte 0"),
        Case(#"{"x":1e400}"#, .invalidJSON, "$.x", "Number 1e400 is out of range for a float64"),
        // Unicode
        Case(#"["\ud800"]"#, .invalidUTF8, "$[0]", "Unpaired surrogate in a string escape"),
        Case(#""\udc00x""#, .invalidUTF8, "$", "Unpaired surrogate in a string escape"),
        Case(bytes: [0x22, 0xFF, 0x22], .invalidUTF8, "$", "String is not valid UTF-8"),
        Case(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8, "$", "String is not valid UTF-8"),
        Case(bytes: [0x22, 0xC0, 0xAF, 0x22], .invalidUTF8, "$", "String is not valid UTF-8"),
        // $integer
        Case(
            #"{"teams":[{},{},{},{"wins":{"$integer":"UAAAAAAA"}}]}"#, .invalidInt64, "$.teams[3].wins",
            "Int64 must be exactly eight bytes"),
        Case(#"{"$integer":5}"#, .invalidInt64, "$", "Invalid $integer: expected a standard base64 string"),
        Case(
            #"{"$integer":"BQAAAAAAAA-="}"#, .invalidInt64, "$", "Invalid $integer: expected a standard base64 string"),
        Case(
            #"{"$integer":"BQAAAAAAAAB="}"#, .invalidInt64, "$", "Invalid $integer: expected a standard base64 string"),
        // $float
        Case(#"{"$float":"AAAAAAAA+D8="}"#, .invalidFloat64, "$", "Float64 1.5 should be encoded as a number"),
        Case(#"{"$float":"AAAAAAAAAAA="}"#, .invalidFloat64, "$", "Float64 0.0 should be encoded as a number"),
        Case(#"{"$float":"AAAA"}"#, .invalidFloat64, "$", "Float64 must be exactly eight bytes"),
        Case(#"{"$float":null}"#, .invalidFloat64, "$", "Invalid $float: expected a standard base64 string"),
        // $bytes
        Case(#"{"x":{"$bytes":"-_8="}}"#, .invalidBytes, "$.x", "Invalid $bytes: expected a standard base64 string"),
        Case(#"{"$bytes":"A"}"#, .invalidBytes, "$", "Invalid $bytes: expected a standard base64 string"),
        Case(#"{"$bytes":"AQ="}"#, .invalidBytes, "$", "Invalid $bytes: expected a standard base64 string"),
        Case(#"{"$bytes":"AR=="}"#, .invalidBytes, "$", "Invalid $bytes: expected a standard base64 string"),
        Case(#"{"$bytes":"AQ== "}"#, .invalidBytes, "$", "Invalid $bytes: expected a standard base64 string"),
        Case(#"{"$bytes":["AQ=="]}"#, .invalidBytes, "$", "Invalid $bytes: expected a standard base64 string"),
        // Retired types
        Case(
            #"{"s":{"$set":[]}}"#, .retiredType, "$.s",
            "Received a Set which is no longer supported as a Convex type, with values: []"),
        Case(
            #"[{"$map":[[1,2]]}]"#, .retiredType, "$[0]",
            "Received a Map which is no longer supported as a Convex type, with values: [[1.0,2.0]]"),
        // Field names
        Case(
            #"{"$foo":1}"#, .invalidFieldName, #"$["$foo"]"#, "Field name \"$foo\" starts with a '$', which is reserved"
        ),
        Case(
            #"{"a":1,"$integer":"BQAAAAAAAAA="}"#, .invalidFieldName, #"$["$integer"]"#,
            "Field name \"$integer\" starts with a '$', which is reserved"),
        Case(
            #"{"$integer":"BQAAAAAAAAA=","a":1}"#, .invalidFieldName, #"$["$integer"]"#,
            "Field name \"$integer\" starts with a '$', which is reserved"),
        Case(
            #"{"ok":{"tab\t":1}}"#, .invalidFieldName, #"$.ok["tab\t"]"#,
            "Field name \"tab\\t\" has invalid character(s): field names may only contain non-control ASCII characters"),
        Case(
            #"{"é":1}"#, .invalidFieldName, #"$["é"]"#,
            "Field name \"é\" has invalid character(s): field names may only contain non-control ASCII characters"),
        Case(
            #"{"\u007f":1}"#, .invalidFieldName, "$[\"\u{7F}\"]",
            "Field name \"\u{7F}\" has invalid character(s): field names may only contain non-control ASCII characters"),
        Case(
            #"{"\u0024x":1}"#, .invalidFieldName, #"$["$x"]"#, "Field name \"$x\" starts with a '$', which is reserved"),
        Case(
            "{\"\(longKey)\":1}", .invalidFieldName, "$.\(longKey)", "Field name is 1025 bytes long; the limit is 1024"),
        Case(#"{"a":1,"a":2}"#, .duplicateField, "$.a", "Duplicate field name \"a\" in an object"),
        Case(#"{"a":1,"\u0061":2}"#, .duplicateField, "$.a", "Duplicate field name \"a\" in an object"),
        // Limits
        Case(
            String(repeating: "[", count: 65) + String(repeating: "]", count: 65), .tooNested,
            "$" + String(repeating: "[0]", count: 64), "Value is too nested (nested 65 levels deep > maximum 64)"),
        Case(
            String(repeating: "{\"a\":", count: 70) + "1" + String(repeating: "}", count: 70), .tooNested,
            "$" + String(repeating: ".a", count: 64), "Value is too nested (nested 65 levels deep > maximum 64)"),
        Case(
            "[" + Array(repeating: "1", count: 8193).joined(separator: ",") + "]", .arrayTooLong, "$",
            "Array length is too long (more than maximum length 8192)"),
        Case(
            "{\"o\":{" + (0...1024).map { "\"k\($0)\":1" }.joined(separator: ",") + "}}", .tooManyFields, "$.o",
            "Object has too many fields (more than maximum number 1024)"),
        Case(
            "["
                + Array(repeating: "\"" + String(repeating: "x", count: 1 << 20) + "\"", count: 32).joined(
                    separator: ",")
                + "]", .valueTooLarge, "$", "Value is too large (33554498 bytes > maximum size 33554432 bytes)"),
    ]

    @Test(arguments: cases)
    func parserAndTranscoderReject(_ c: Case) {
        let parsed = Result { () throws(ConvexValueError) in try ConvexValue(convexJSON: c.json) }
        guard case .failure(let e) = parsed else {
            Issue.record("accepted")
            return
        }
        #expect(e.code == c.code)
        #expect(e.path == c.path)
        #expect(e.message == c.message)
        #expect(e.description == "\(c.message) (at \(c.path))")
        for mode in OutputFormat.allCases {
            let rendered = Result { () throws(ConvexValueError) in try ConvexJSONTranscoder.render(c.json, mode: mode) }
            #expect(rendered.map { _ in 0 } == .failure(e))
            var out: [UInt8] = []
            #expect(
                !c.json.withUnsafeBufferPointer { ConvexJSONTranscoder.fastRender(buffer: $0, mode: mode, into: &out) })
        }
    }

    @Test func envelopeNestingIsCappedToo() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect {
            try ConvexValue(envelopeJSON: Array(deep.utf8))
        } throws: { error in
            (error as? ConvexValueError)?.code == .tooNested
        }
    }
}
