import Foundation
import PropertyBased
import TestSupport
import Testing

@testable import ConvexValues

/// value → Convex JSON → value is the identity (bitwise for floats).
@Suite struct RoundTripPropertyTests {
    func roundTrips(_ value: ConvexValue) -> Bool {
        let bytes = value.convexJSON()
        guard let back = try? ConvexValue(convexJSON: bytes) else { return false }
        // The transcoder's `encoded` output reads back to the same value too.
        guard let encoded = try? ConvexJSONTranscoder.render(bytes, mode: .encoded),
            let again = try? ConvexValue(convexJSON: encoded)
        else { return false }
        return back == value && again == value && back.convexJSON() == bytes
    }

    @Test func randomValues() async {
        await propertyCheck(count: 500, input: RandomValues.generator) { value in
            #expect(roundTrips(value), "\(value)")
        }
    }

    @Test func nestingUpToTheLimit() async {
        await propertyCheck(count: 200, input: RandomValues.deepGenerator) { value in
            #expect(value.nestingDepth <= ConvexLimits.maxNesting)
            #expect(roundTrips(value), "\(value)")
        }
    }

    @Test func int64AcrossTheWholeRange() async {
        await propertyCheck(count: 1000, input: Gen.int64()) { n in
            #expect(roundTrips(.int64(n)))
            #expect((try? ConvexJSONTranscoder.render(ConvexValue.int64(n).convexJSON())) == Array(String(n).utf8))
        }
    }

    @Test func everyFloatBitPatternIncludingNaNPayloads() async {
        await propertyCheck(count: 1000, input: Gen.uint64(), Gen.uint64(in: 1...0xF_FFFF_FFFF_FFFF), Gen.bool) {
            bits, payload, negative in
            #expect(roundTrips(.float64(Double(bitPattern: bits))))
            let nan = Double(bitPattern: (negative ? 0xFFF0_0000_0000_0000 : 0x7FF0_0000_0000_0000) | payload)
            #expect(nan.isNaN)
            #expect(roundTrips(.float64(nan)))
            #expect(
                (try? ConvexValue(convexJSON: ConvexValue.float64(nan).convexJSON()))?.convexJSON()
                    == ConvexValue.float64(nan).convexJSON())
        }
        #expect(roundTrips(.float64(-0.0)))
        #expect(roundTrips([.float64(-0.0), .float64(0.0)]))
    }

    @Test func nonASCIIStrings() async {
        // Scalars from every UTF-8 length (1–4 bytes), surrogates excluded.
        let scalars = Generator<String, Shrink.None<String>> { rng in
            var r = SplitMix(seed: rng.next())
            var s = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...24, using: &r) {
                let ranges: [ClosedRange<UInt32>] = [
                    0...0x7F, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF,
                ]
                let value = UInt32.random(in: ranges.randomElement(using: &r)!, using: &r)
                if let scalar = Unicode.Scalar(value) { s.append(scalar) }
            }
            return String(s)
        }
        await propertyCheck(count: 500, input: scalars) { s in
            #expect(roundTrips(.string(s)))
            #expect(roundTrips(["k": .string(s), "list": [.string(s)]]))
        }
    }

    @Test func bytesOfEveryLength() async {
        await propertyCheck(count: 300, input: Gen.uint8().array(of: 0...70)) { bytes in
            #expect(roundTrips(.bytes(Data(bytes))))
            // Unpadded input decodes to the same bytes.
            let padded = Base64.encode(bytes)
            let unpadded = String(padded.prefix { $0 != "=" })
            #expect((try? ConvexValue(convexJSON: #"{"$bytes":"\#(unpadded)"}"#)) == .bytes(Data(bytes)))
        }
    }
}
