import Foundation
import PropertyBased
import TestSupport
import Testing

@testable import ConvexValues

@Suite struct TranscoderTests {
    /// Convex JSON in, then the expected `plain`, `clean` and `encoded` outputs.
    @Test(arguments: [
        (#"{"$integer":"BQAAAAAAAAA="}"#, "5", #""5""#, #"{"$integer":"BQAAAAAAAAA="}"#),
        (#"{"$integer":"BQAAAAAAAAA"}"#, "5", #""5""#, #"{"$integer":"BQAAAAAAAAA="}"#),
        (#"{"$integer":"//////////8="}"#, "-1", #""-1""#, #"{"$integer":"//////////8="}"#),
        (
            #"{"$integer":"AAAAAAAAAIA="}"#, "-9223372036854775808", #""-9223372036854775808""#,
            #"{"$integer":"AAAAAAAAAIA="}"#
        ),
        (
            #"{"$integer":"/////////38="}"#, "9223372036854775807", #""9223372036854775807""#,
            #"{"$integer":"/////////38="}"#
        ),
        (#"{"$float":"AAAAAAAA+H8="}"#, #""NaN""#, #""NaN""#, #"{"$float":"AAAAAAAA+H8="}"#),
        (#"{"$float":"AAAAAAAA8H8="}"#, #""Infinity""#, #""Infinity""#, #"{"$float":"AAAAAAAA8H8="}"#),
        (#"{"$float":"AAAAAAAA8P8="}"#, #""-Infinity""#, #""-Infinity""#, #"{"$float":"AAAAAAAA8P8="}"#),
        (#"{"$float":"AAAAAAAAAIA="}"#, "-0.0", "-0.0", #"{"$float":"AAAAAAAAAIA="}"#),
        ("-0", "-0.0", "-0.0", #"{"$float":"AAAAAAAAAIA="}"#),
        (#"{"$bytes":"AAH/"}"#, #""AAH/""#, #""AAH/""#, #"{"$bytes":"AAH/"}"#),
        (#"{"$bytes":"AQ"}"#, #""AQ==""#, #""AQ==""#, #"{"$bytes":"AQ=="}"#),
        (#"{"$bytes":""}"#, #""""#, #""""#, #"{"$bytes":""}"#),
        ("3", "3.0", "3.0", "3.0"),
        ("1.50", "1.5", "1.5", "1.5"),
        ("1e0", "1.0", "1.0", "1.0"),
        ("0.00001", "1e-05", "1e-05", "1e-05"),
        ("12345678901234567890", "1.2345678901234567e+19", "1.2345678901234567e+19", "1.2345678901234567e+19"),
        ("1E+2", "100.0", "100.0", "100.0"),
        ("0.1", "0.1", "0.1", "0.1"),
        (" [ true , false , null ] ", "[true,false,null]", "[true,false,null]", "[true,false,null]"),
        (#""a\u00e9\/\n\u0001""#, #""aé/\n\u0001""#, #""aé/\n\u0001""#, #""aé/\n\u0001""#),
        (
            #"{"b":{"$integer":"UAAAAAAAAAA="},"a":[{"$bytes":"aGk="}]}"#, #"{"b":80,"a":["aGk="]}"#,
            #"{"b":"80","a":["aGk="]}"#, #"{"b":{"$integer":"UAAAAAAAAAA="},"a":[{"$bytes":"aGk="}]}"#
        ),
        (#"{"k\u0041":1}"#, #"{"kA":1.0}"#, #"{"kA":1.0}"#, #"{"kA":1.0}"#),
    ])
    func rendersEachMode(input: String, plain: String, clean: String, encoded: String) throws {
        #expect(
            String(decoding: try ConvexJSONTranscoder.render(Array(input.utf8), mode: .plain), as: UTF8.self) == plain)
        #expect(
            String(decoding: try ConvexJSONTranscoder.render(Array(input.utf8), mode: .clean), as: UTF8.self) == clean)
        #expect(
            String(decoding: try ConvexJSONTranscoder.render(Array(input.utf8), mode: .encoded), as: UTF8.self)
                == encoded)
        // The streaming path handled it (no detour through the value parser).
        for mode in OutputFormat.allCases {
            var out: [UInt8] = []
            #expect(
                Array(input.utf8).withUnsafeBufferPointer {
                    ConvexJSONTranscoder.fastRender(buffer: $0, mode: mode, into: &out)
                })
        }
    }

    @Test func cleanIsConvexFormatJSONOfTheValue() throws {
        let value: ConvexValue = [
            "name": "Guardians", "uniformColors": ["blue", "white", "red"], "wins": 80, "losses": .int64(60),
            "ratio": 0.5, "raw": .bytes(Data([0, 1, 0xFF])), "nan": .float64(.nan), "negZero": .float64(-0.0),
        ]
        #expect(
            value.jsonString(mode: .clean)
                == #"{"losses":"60","name":"Guardians","nan":"NaN","negZero":-0.0,"ratio":0.5,"raw":"AAH/","uniformColors":["blue","white","red"],"wins":"80"}"#
        )
        #expect(
            value.jsonString(mode: .plain)
                == #"{"losses":60,"name":"Guardians","nan":"NaN","negZero":-0.0,"ratio":0.5,"raw":"AAH/","uniformColors":["blue","white","red"],"wins":80}"#
        )
        #expect(value.json(mode: .encoded) == value.convexJSON())
        for mode in OutputFormat.allCases {
            #expect(try ConvexJSONTranscoder.render(value.convexJSON(), mode: mode) == value.json(mode: mode))
        }
    }

    @Test func wrappedInputDirection() throws {
        // Plain JSON from an HTTP client: numbers are float64, wrappers still give exact int64 and bytes.
        let v = try ConvexValue(
            plainJSON: Array(#"{"n":5,"big":{"$integer":"/////////38="},"b":{"$bytes":"AQ"}}"#.utf8))
        #expect(v == ["n": 5.0, "big": .int64(.max), "b": .bytes(Data([1]))])
    }

    @Test func appendsToExistingBytesAndLeavesThemOnError() throws {
        var out = Array("data: ".utf8)
        try ConvexJSONTranscoder.render(Array("[1]".utf8), mode: .plain, appendingTo: &out)
        #expect(String(decoding: out, as: UTF8.self) == "data: [1.0]")
        #expect(throws: ConvexValueError.self) {
            try ConvexJSONTranscoder.render(Array("[1,".utf8), mode: .plain, appendingTo: &out)
        }
        #expect(String(decoding: out, as: UTF8.self) == "data: [1.0]")
    }

    @Test func acceptsDataAndNonContiguousInput() throws {
        #expect(try ConvexJSONTranscoder.render(Data("[true]".utf8)) == Array("[true]".utf8))
        #expect(try ConvexJSONTranscoder.render("[true]".utf8) == Array("[true]".utf8))
    }

    @Test func limitsAtTheEdge() throws {
        let deepOK =
            String(repeating: "[", count: 64) + #"{"$integer":"AQAAAAAAAAA="}"# + String(repeating: "]", count: 64)
        #expect(
            String(decoding: try ConvexJSONTranscoder.render(Array(deepOK.utf8)), as: UTF8.self)
                == String(repeating: "[", count: 64) + "1" + String(repeating: "]", count: 64))
        let long = "[" + Array(repeating: "0", count: ConvexLimits.maxArrayLength).joined(separator: ",") + "]"
        #expect(try ConvexJSONTranscoder.render(Array(long.utf8)).count == long.count + 2 * ConvexLimits.maxArrayLength)
        let longer = "[" + Array(repeating: "0", count: ConvexLimits.maxArrayLength + 1).joined(separator: ",") + "]"
        #expect(throws: ConvexValueError.self) { try ConvexJSONTranscoder.render(Array(longer.utf8)) }
        let wide = "{" + (0..<ConvexLimits.maxObjectFields).map { "\"f\($0)\":null" }.joined(separator: ",") + "}"
        #expect(try ConvexJSONTranscoder.render(Array(wide.utf8)) == Array(wide.utf8))
        let wider = "{" + (0...ConvexLimits.maxObjectFields).map { "\"f\($0)\":null" }.joined(separator: ",") + "}"
        #expect(throws: ConvexValueError.self) { try ConvexJSONTranscoder.render(Array(wider.utf8)) }
        let dupLate = "{" + (0..<100).map { "\"f\($0)\":null" }.joined(separator: ",") + #","f7":1}"#
        #expect(throws: ConvexValueError.self) { try ConvexJSONTranscoder.render(Array(dupLate.utf8)) }
    }

    @Test func wrapperKeyWords() {
        func word(_ s: String) -> UInt64 {
            s.utf8.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        }
        #expect(StreamingTranscoder.integerKey == word("$integer"))
        #expect(StreamingTranscoder.floatKey == word("$float\""))
        #expect(StreamingTranscoder.bytesKey == word("$bytes\""))
    }

    @Test func outputLargerThanTheInputEstimate() throws {
        // `-0` grows to a 28-byte wrapper in `encoded`, `1e15` to `1000000000000000.0` in `plain`.
        for (item, mode) in [("-0", OutputFormat.encoded), ("1e15", .plain), ("0", .clean)] {
            let json = Array(("[" + Array(repeating: item, count: 5000).joined(separator: ",") + "]").utf8)
            var out: [UInt8] = []
            #expect(
                json.withUnsafeBufferPointer { ConvexJSONTranscoder.fastRender(buffer: $0, mode: mode, into: &out) })
            #expect(out == (try ConvexValue(convexJSON: json)).json(mode: mode))
            #expect(out.count > json.count * 5 / 4)
        }
    }

    @Test func sizeLimit() throws {
        // 32 MiB of string content in one value is over the limit (size = bytes + 2 per string + 2 per array).
        let chunk = String(repeating: "x", count: 1 << 20)
        let items = Array(repeating: "\"\(chunk)\"", count: 32).joined(separator: ",")
        let json = Array("[\(items)]".utf8)
        #expect {
            try ConvexJSONTranscoder.render(json)
        } throws: { error in
            (error as? ConvexValueError)?.code == .valueTooLarge
        }
        #expect(throws: ConvexValueError.self) { try ConvexValue(convexJSON: json) }
        let fits = Array("[\(Array(repeating: "\"\(chunk)\"", count: 31).joined(separator: ","))]".utf8)
        #expect(try ConvexJSONTranscoder.render(fits, mode: .encoded) == fits)
    }

    // MARK: Properties

    @Test func transcoderMatchesTheValueWriter() async {
        await propertyCheck(count: 400, input: RandomValues.generator) { value in
            let encoded = value.convexJSON()
            for mode in OutputFormat.allCases {
                var out: [UInt8] = []
                let streamed = encoded.withUnsafeBufferPointer {
                    ConvexJSONTranscoder.fastRender(buffer: $0, mode: mode, into: &out)
                }
                #expect(streamed)
                #expect(out == value.json(mode: mode), "mode \(mode.rawValue) of \(value)")
            }
        }
    }

    @Test func plainAndCleanAreValidJSON() async {
        await propertyCheck(count: 200, input: RandomValues.generator) { value in
            for mode in [OutputFormat.plain, .clean] {
                let out = (try? ConvexJSONTranscoder.render(value.convexJSON(), mode: mode)) ?? []
                #expect(
                    (try? JSONSerialization.jsonObject(with: Data(out), options: [.fragmentsAllowed])) != nil,
                    "\(String(decoding: out, as: UTF8.self))")
            }
        }
    }

    @Test func numbersPrintAsTheShortestRoundTrip() async {
        let doubles = Generator<Double, Shrink.None<Double>> { rng in
            var r = SplitMix(seed: rng.next())
            switch Int.random(in: 0..<4, using: &r) {
            case 0: return Double(bitPattern: r.next())
            case 1: return Double(Int64.random(in: -99_999_999_999_999...99_999_999_999_999, using: &r)) / 100
            case 2: return Double(Int.random(in: 1...999_999, using: &r)) / 1_000_000
            default: return RandomValues.interestingFloats.randomElement(using: &r)!
            }
        }
        await propertyCheck(count: 1000, input: doubles) { d in
            guard d.isFinite else { return }
            // Several spellings of the same number all print as Swift's shortest round-trip text.
            var spellings = [d.description]
            if d == d.rounded(), abs(d) < 1e15, d.sign == .plus { spellings.append(String(Int64(d))) }
            if !d.description.contains("e") { spellings.append(d.description + "0") }
            spellings.append(String(format: "%.17g", d))
            for text in spellings where !text.hasSuffix("e+00") {
                guard let out = try? ConvexJSONTranscoder.render(Array(text.utf8), mode: .plain) else {
                    Issue.record("rejected \(text)")
                    continue
                }
                let expected = d.sign == .minus && d == 0 ? "-0.0" : d.description
                #expect(String(decoding: out, as: UTF8.self) == expected, "input \(text)")
            }
        }
    }

    /// Random damage to valid documents: the transcoder accepts exactly what the value parser accepts, reports the
    /// same error, and otherwise renders the same value.
    @Test func agreesWithTheParserOnDamagedInput() async {
        let damaged = Generator<[UInt8], Shrink.None<[UInt8]>> { rng in
            var r = SplitMix(seed: rng.next())
            var bytes = RandomValues.value(&r).convexJSON()
            let alphabet = Array(#"{}[]",:$\ 0123456789.eE+-ntfrual"#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xED, 0xFF]
            for _ in 0..<Int.random(in: 1...3, using: &r) {
                let i = Int.random(in: 0...bytes.count, using: &r)
                switch Int.random(in: 0..<3, using: &r) {
                case 0 where i < bytes.count: bytes[i] = alphabet.randomElement(using: &r)!
                case 1 where i < bytes.count: bytes.remove(at: i)
                default: bytes.insert(alphabet.randomElement(using: &r)!, at: i)
                }
            }
            return bytes
        }
        // CONVEX_FUZZ_COUNT raises the number of cases for a longer local run.
        let count = ProcessInfo.processInfo.environment["CONVEX_FUZZ_COUNT"].flatMap { Int($0) } ?? 2000
        await propertyCheck(count: count, input: damaged) { bytes in
            let parsed = Result { () throws(ConvexValueError) in try ConvexValue(convexJSON: bytes) }
            var fastOut: [UInt8] = []
            let streamed = bytes.withUnsafeBufferPointer {
                ConvexJSONTranscoder.fastRender(buffer: $0, mode: .encoded, into: &fastOut)
            }
            let rendered = Result { () throws(ConvexValueError) in
                try ConvexJSONTranscoder.render(bytes, mode: .encoded)
            }
            let text = String(decoding: bytes, as: UTF8.self)
            switch (parsed, rendered) {
            case (.failure(let a), .failure(let b)):
                #expect(a == b, "\(text)")
                #expect(!streamed, "streamed invalid input \(text)")
            case (.success(let value), .success(let out)):
                #expect((try? ConvexValue(convexJSON: out)) == value, "\(text)")
                let plain = try? ConvexJSONTranscoder.render(bytes, mode: .plain)
                #expect(
                    plain.flatMap { try? ConvexValue(plainJSON: $0) }
                        == (try? ConvexValue(plainJSON: value.json(mode: .plain))), "\(text)")
            case (.success, .failure(let e)):
                Issue.record("transcoder rejected valid input \(text): \(e)")
            case (.failure(let e), .success):
                Issue.record("transcoder accepted invalid input \(text), parser says \(e)")
            }
        }
    }
}
