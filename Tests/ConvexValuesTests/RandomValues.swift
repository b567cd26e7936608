import Foundation
import PropertyBased
import TestSupport

@testable import ConvexValues

enum RandomValues {
    static let interestingInts: [Int64] = [
        0, 1, -1, 2, -2, 5, 7, 255, 256, -256, 1 << 31, -(1 << 31), 1 << 53, (1 << 53) + 1,
        -(1 << 53) - 1, .max, .min, .max - 1, .min + 1,
    ]
    static let interestingFloats: [Double] = [
        0.0, -0.0, 1.0, -1.0, 1.5, 0.1, 0.001, 0.0001, 1e-5, 1e15, 1e16, 1e21, 1e300,
        -1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNormalMagnitude, 9007199254740992.0, 123456789012345.6, 3.0,
        100.0, .nan, -.nan, .infinity, -.infinity, .signalingNaN,
        Double(bitPattern: 0x7FF0_0000_0000_0001), Double(bitPattern: 0xFFFF_FFFF_FFFF_FFFF),
    ]
    static let stringPieces: [String] = [
        "a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "ß", "中",
        "日本", "😀", "👩‍👩‍👧", "\u{2028}", "\u{FFFD}", "\u{10FFFF}", "$", "_id", "0",
    ]

    static func int64<R: RandomNumberGenerator>(_ r: inout R) -> Int64 {
        Bool.random(using: &r) ? interestingInts.randomElement(using: &r)! : Int64.random(in: .min ... .max, using: &r)
    }

    static func float64<R: RandomNumberGenerator>(_ r: inout R) -> Double {
        switch Int.random(in: 0..<6, using: &r) {
        case 0: return interestingFloats.randomElement(using: &r)!
        case 1: return Double(bitPattern: r.next())  // any bit pattern, NaN payloads included
        // NaN payloads
        case 2: return Double(bitPattern: 0x7FF0_0000_0000_0000 | (r.next() & 0x800F_FFFF_FFFF_FFFF) | 1)
        case 3: return Double(Int.random(in: -1_000_000...1_000_000, using: &r))
        case 4: return Double(Int.random(in: -1_000_000...1_000_000, using: &r)) / 1000
        default: return Double.random(in: -1e6...1e6, using: &r)
        }
    }

    static func string<R: RandomNumberGenerator>(_ r: inout R) -> String {
        var s = ""
        for _ in 0..<Int.random(in: 0...8, using: &r) {
            if Bool.random(using: &r) {
                s += stringPieces.randomElement(using: &r)!
            } else {
                var scalar: Unicode.Scalar?
                while scalar == nil { scalar = Unicode.Scalar(UInt32.random(in: 0...0x10FFFF, using: &r)) }
                s.unicodeScalars.append(scalar!)
            }
        }
        return s
    }

    static func fieldName<R: RandomNumberGenerator>(_ r: inout R) -> String {
        let common = [
            "a", "b", "name", "wins", "_id", "_creationTime", "in", "out", "x y", "\"q\"", "back\\slash", "", "a$",
        ]
        if Bool.random(using: &r) { return common.randomElement(using: &r)! }
        var s = ""
        for _ in 0..<Int.random(in: 1...12, using: &r) {
            s.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &r)))
        }
        while s.hasPrefix("$") { s.removeFirst() }  // "$" may repeat: "$$x" must not become "$x"
        return s
    }

    static func value<R: RandomNumberGenerator>(_ r: inout R, depth: Int = 4) -> ConvexValue {
        let kind = Int.random(in: 0..<(depth > 0 ? 9 : 7), using: &r)
        switch kind {
        case 0: return .null
        case 1: return .int64(int64(&r))
        case 2: return .float64(float64(&r))
        case 3: return .boolean(Bool.random(using: &r))
        case 4: return .string(string(&r))
        case 5:
            return .bytes(
                Data((0..<Int.random(in: 0...20, using: &r)).map { _ in UInt8.random(in: 0...255, using: &r) }))
        case 6: return .int64(int64(&r))
        case 7: return .array((0..<Int.random(in: 0...5, using: &r)).map { _ in value(&r, depth: depth - 1) })
        default:
            var fields: [String: ConvexValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &r) { fields[fieldName(&r)] = value(&r, depth: depth - 1) }
            return .object(fields)
        }
    }

    /// A value nested exactly `levels` containers deep.
    static func nested<R: RandomNumberGenerator>(_ r: inout R, levels: Int) -> ConvexValue {
        var v = value(&r, depth: 0)
        for _ in 0..<levels {
            v = Bool.random(using: &r) ? .array([v, value(&r, depth: 0)]) : .object([fieldName(&r): v])
        }
        return v
    }

    static var generator: Generator<ConvexValue, Shrink.None<ConvexValue>> {
        Generator { rng in
            var r = SplitMix(seed: rng.next())  // seeded from the property checker's generator: failures reproduce
            return value(&r)
        }
    }

    static var deepGenerator: Generator<ConvexValue, Shrink.None<ConvexValue>> {
        Generator { rng in
            var r = SplitMix(seed: rng.next())
            return nested(&r, levels: Int.random(in: 1...ConvexLimits.maxNesting, using: &r))
        }
    }
}
