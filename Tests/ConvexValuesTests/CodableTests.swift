import Foundation
import PropertyBased
import Testing

@testable import ConvexValues

// Example application types: a team whose bigint counts arrive as `$integer`, a log with renamed keys.
struct BaseballTeam: Codable, Equatable {
    let name: String
    let uniformColors: [String]
    @ConvexInt
    var wins: Int
    @ConvexInt
    var losses: Int
}

/// Custom structs join mixed argument dictionaries by adopting the marker protocol.
extension BaseballTeam: ConvexEncodable {}

struct Log: Codable, Equatable {
    let name: String
    let inTime: String
    let outTime: String
    enum CodingKeys: String, CodingKey {
        case name
        case inTime = "in"
        case outTime = "out"
    }
}

struct FloatWinsTeam: Decodable {
    let name: String
    let uniformColors: [String]
    @ConvexFloat
    private var internalWins: Double
    @ConvexFloat
    private var internalLosses: Double
    enum CodingKeys: String, CodingKey {
        case name
        case uniformColors
        case internalWins = "wins"
        case internalLosses = "losses"
    }
    var wins: Int { Int(internalWins) }
    var losses: Int { Int(internalLosses) }
}

struct AllWrappers: Codable, Equatable {
    @ConvexInt var int: Int
    @ConvexInt var int32: Int32
    @ConvexInt var int64: Int64
    @ConvexFloat var double: Double
    @ConvexFloat var float: Float
    @OptionalConvexInt var maybeInt: Int?
    @OptionalConvexInt var maybeInt32: Int32?
    @OptionalConvexFloat var maybeDouble: Double?
    @OptionalConvexFloat var maybeFloat: Float?
}

struct Roster: Codable, Equatable {
    var teams: [BaseballTeam]
    var byCity: [String: BaseballTeam]
    var logo: Data
    var note: String?
    var scores: [Int64]
    var ratio: Double
    var flags: [Bool]
}

struct Small: Codable { @ConvexInt var n: Int32 }
struct Nested: Codable { var teams: [BaseballTeam] }

let guardiansValue: ConvexValue = [
    "name": "Guardians", "uniformColors": ["blue", "white", "red"], "wins": .int64(80), "losses": .int64(60),
]
let guardians = BaseballTeam(name: "Guardians", uniformColors: ["blue", "white", "red"], wins: 80, losses: 60)

/// The JSON path named in a decoding error's description.
func describedPath(_ error: any Error) -> String? {
    let description: String
    switch error as? DecodingError {
    case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
        description = c.debugDescription
    default:
        return nil
    }
    guard let range = description.range(of: "(at ", options: .backwards) else { return nil }
    return String(description[range.upperBound...].dropLast())
}

@Suite struct CodableExampleTests {
    @Test func baseballTeamFromBigInts() throws {
        // `wins: 80n, losses: 60n` arrive as $integer wrappers.
        let json = guardiansValue.convexJSON()
        #expect(String(decoding: json, as: UTF8.self).contains(#""wins":{"$integer":"UAAAAAAAAAA="}"#))
        #expect(try ConvexDecoder().decode(BaseballTeam.self, from: json) == guardians)
        #expect(try ConvexDecoder().decode(BaseballTeam.self, from: guardiansValue) == guardians)
        // Foundation's JSONDecoder reading the same Convex JSON text, as the official client does.
        #expect(try JSONDecoder().decode(BaseballTeam.self, from: Data(json)) == guardians)
        // And back: the wrappers encode as int64.
        #expect(try ConvexValue(encoding: guardians) == guardiansValue)
        #expect(try ConvexValue(convexJSON: JSONEncoder().encode(guardians)) == guardiansValue)
    }

    @Test func logWithRenamedKeys() throws {
        let value: ConvexValue = ["name": "Bob", "in": "2024-10-03 08:00:00", "out": "2024-10-03 11:00:00"]
        let log = try ConvexDecoder().decode(Log.self, from: value)
        #expect(log == Log(name: "Bob", inTime: "2024-10-03 08:00:00", outTime: "2024-10-03 11:00:00"))
        #expect(try ConvexValue(encoding: log) == value)
        #expect(try JSONDecoder().decode(Log.self, from: Data(value.convexJSON())) == log)
    }

    @Test func floatStorageExposedAsInt() throws {
        // Plain JavaScript numbers: float64 on the wire, `80.0` from Convex or `80` from other JSON writers.
        let plain = Array(#"{"name":"Guardians","uniformColors":["blue","white","red"],"wins":80,"losses":60.0}"#.utf8)
        let team = try ConvexDecoder().decode(FloatWinsTeam.self, from: plain)
        #expect(team.wins == 80 && team.losses == 60 && team.name == "Guardians")
        let viaFoundation = try JSONDecoder().decode(FloatWinsTeam.self, from: Data(plain))
        #expect(viaFoundation.wins == 80 && viaFoundation.losses == 60)
        // Decoding the same numbers as @ConvexInt fails, as the seed says, naming the field.
        #expect {
            try ConvexDecoder().decode(BaseballTeam.self, from: plain)
        } throws: { error in
            guard case .typeMismatch(_, let context) = error as? DecodingError else { return false }
            return context.codingPath.map(\.stringValue) == ["wins"] && describedPath(error) == "$.wins"
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(BaseballTeam.self, from: Data(plain)) }
    }
}

@Suite struct CodableTests {
    @Test func wrappersRoundTripWithBothCoders() throws {
        let full = AllWrappers(
            int: .min, int32: .max, int64: .max, double: -0.0, float: .infinity, maybeInt: 7,
            maybeInt32: -2, maybeDouble: .nan, maybeFloat: 1.5)
        let value = try ConvexValue(encoding: full)
        #expect(value["int"] == .int64(.min))
        #expect(value["int32"] == .int64(Int64(Int32.max)))
        #expect(value["double"] == .float64(-0.0))
        #expect(value["float"] == .float64(.infinity))
        #expect(value["maybeDouble"] == .float64(.nan))
        #expect(value["maybeFloat"] == .float64(1.5))
        let back = try ConvexDecoder().decode(AllWrappers.self, from: value)
        #expect(
            back.int == .min && back.int32 == .max && back.int64 == .max && back.maybeInt == 7 && back.maybeInt32 == -2)
        #expect(back.double.bitPattern == (-0.0 as Double).bitPattern && back.float == .infinity)
        #expect(back.maybeDouble?.isNaN == true && back.maybeFloat == 1.5)
        // Foundation's coders: Convex JSON text out, and read back.
        let text = try JSONEncoder().encode(full)
        #expect(try ConvexValue(convexJSON: text) == value)
        let viaFoundation = try JSONDecoder().decode(AllWrappers.self, from: text)
        #expect(
            viaFoundation.int == .min && viaFoundation.double.sign == .minus && viaFoundation.maybeDouble?.isNaN == true
        )
    }

    @Test func optionalWrappersOmitNilAndReadMissingOrNullAsNil() throws {
        let empty = AllWrappers(
            int: 1, int32: 2, int64: 3, double: 4, float: 5, maybeInt: nil, maybeInt32: nil,
            maybeDouble: nil, maybeFloat: nil)
        let value = try ConvexValue(encoding: empty)
        #expect(value == ["int": 1, "int32": 2, "int64": 3, "double": 4.0, "float": 5.0])
        #expect(try ConvexDecoder().decode(AllWrappers.self, from: value) == empty)
        #expect(try JSONDecoder().decode(AllWrappers.self, from: Data(value.convexJSON())) == empty)
        let nulls = ConvexValue.object([
            "int": 1, "int32": 2, "int64": 3, "double": 4.0, "float": 5.0, "maybeInt": nil,
            "maybeInt32": nil, "maybeDouble": nil, "maybeFloat": nil,
        ])
        #expect(try ConvexDecoder().decode(AllWrappers.self, from: nulls) == empty)
        #expect(try JSONDecoder().decode(AllWrappers.self, from: Data(nulls.convexJSON())) == empty)
        #expect(String(decoding: try JSONEncoder().encode(empty), as: UTF8.self).contains("maybe") == false)
    }

    @Test func rejectionsNameTheKeyPath() throws {
        // Out of Int32 range.
        let big: ConvexValue = ["n": .int64(Int64(Int32.max) + 1)]
        for decode in [
            { try ConvexDecoder().decode(Small.self, from: big) },
            { try JSONDecoder().decode(Small.self, from: Data(big.convexJSON())) },
        ] {
            #expect {
                _ = try decode()
            } throws: { error in
                guard case .dataCorrupted(let c) = error as? DecodingError else { return false }
                return c.codingPath.map(\.stringValue) == ["n"] && describedPath(error) == "$.n"
                    && c.debugDescription.contains("out of range for Int32")
            }
        }
        // Bad base64 through JSONDecoder.
        #expect {
            try JSONDecoder().decode(Small.self, from: Data(#"{"n":{"$integer":"@@@"}}"#.utf8))
        } throws: { error in
            guard case .dataCorrupted(let c) = error as? DecodingError else { return false }
            return c.codingPath.map(\.stringValue) == ["n", "$integer"] && describedPath(error) == "$.n"
        }
        // A nested path through arrays.
        var teams = Array(repeating: guardiansValue, count: 4)
        teams[3] = ["name": "X", "uniformColors": [], "wins": 80.0, "losses": .int64(1)]
        #expect {
            try ConvexDecoder().decode(Nested.self, from: ["teams": .array(teams)])
        } throws: { error in
            describedPath(error) == "$.teams[3].wins"
        }
        // A missing key, and an int64 into a Double.
        #expect {
            try ConvexDecoder().decode(BaseballTeam.self, from: ["name": "X", "uniformColors": [], "wins": 1])
        } throws: { error in
            guard case .keyNotFound(let key, _) = error as? DecodingError else { return false }
            return key.stringValue == "losses" && describedPath(error) == "$.losses"
        }
        #expect {
            try ConvexDecoder().decode([String: Double].self, from: ["x": 1])
        } throws: { error in
            guard case .typeMismatch = error as? DecodingError else { return false }
            return describedPath(error) == "$.x"
        }
        #expect {
            try ConvexDecoder().decode(Float.self, from: .float64(1e300))
        } throws: { error in
            guard case .dataCorrupted = error as? DecodingError else { return false }
            return true
        }
    }

    @Test func argumentEncoding() throws {
        let args = try ConvexValue(encoding: [
            "division": "AL Central", "n": 5, "i32": Int32(-3), "i64": Int64.min, "x": 1.5, "f": Float(0.25),
            "nan": Double.nan, "negInf": -Double.infinity, "negZero": -0.0, "flag": true, "data": Data([0, 1, 0xFF]),
            "list": [1, 2], "dict": ["a": "b"], "none": nil, "team": guardians, "value": ConvexValue.int64(9),
        ])
        #expect(
            args == [
                "division": "AL Central", "n": .int64(5), "i32": .int64(-3), "i64": .int64(.min), "x": 1.5, "f": 0.25,
                "nan": .float64(.nan), "negInf": .float64(-.infinity), "negZero": .float64(-0.0), "flag": true,
                "data": .bytes(Data([0, 1, 0xFF])), "list": [.int64(1), .int64(2)], "dict": ["a": "b"], "none": nil,
                "team": guardiansValue, "value": .int64(9),
            ])
        #expect(String(decoding: args["n"]!.convexJSON(), as: UTF8.self) == #"{"$integer":"BQAAAAAAAAA="}"#)
        // Literal-only arguments as ConvexValue work too; integer literals are int64.
        let literal: ConvexValue = ["division": "AL Central", "n": 5]
        #expect(literal == ["division": "AL Central", "n": .int64(5)])
    }

    @Test func nestedStructsArraysDictionariesOptionalsAndData() throws {
        let roster = Roster(
            teams: [guardians, guardians], byCity: ["Cleveland": guardians], logo: Data([1, 2, 3]),
            note: nil, scores: [.max, .min, 0], ratio: 0.5, flags: [true, false])
        let value = try ConvexValue(encoding: roster)
        #expect(value["logo"] == .bytes(Data([1, 2, 3])))
        #expect(value["note"] == nil)
        #expect(value["byCity"]?["Cleveland"] == guardiansValue)
        #expect(value["scores"] == [.int64(.max), .int64(.min), .int64(0)])
        #expect(try ConvexDecoder().decode(Roster.self, from: value) == roster)
        #expect(try ConvexDecoder().decode(Roster.self, from: ConvexEncoder().encode(roster)) == roster)
    }

    @Test func encodingRejectsInvalidFieldNamesAndOversizedIntegers() {
        #expect {
            try ConvexValue(encoding: ["ok": ["$bad": 1]])
        } throws: { error in
            guard case .invalidValue(_, let c) = error as? EncodingError else { return false }
            return c.debugDescription.contains("starts with a '$'")
                && c.debugDescription.hasSuffix(#"(at $.ok["$bad"])"#)
        }
        #expect {
            try ConvexValue(encoding: ["n": UInt64.max])
        } throws: { error in
            guard case .invalidValue(_, let c) = error as? EncodingError else { return false }
            return c.debugDescription.hasSuffix("(at $.n)")
        }
        #expect(throws: EncodingError.self) {
            try ConvexValue(encoding: Array(repeating: 0, count: ConvexLimits.maxArrayLength + 1))
        }
    }

    @Test func convexValuesPassThroughOurCodersAndRoundTripThroughFoundation() async {
        await propertyCheck(count: 200, input: RandomValues.generator) { value in
            #expect((try? ConvexValue(encoding: value)) == value)
            #expect((try? ConvexDecoder().decode(ConvexValue.self, from: value)) == value)
            // JSONEncoder writes Convex JSON; JSONDecoder reads Convex JSON text back into the same value.
            let text = try? JSONEncoder().encode(value)
            #expect(text.flatMap { try? ConvexValue(convexJSON: $0) } == value)
            #expect((try? JSONDecoder().decode(ConvexValue.self, from: Data(value.convexJSON()))) == value)
        }
    }
}

@Suite struct ObjectSavableTests {
    struct Settings: Codable {
        var team: BaseballTeam
        @ConvexInt var counter: Int64
        @ConvexFloat var ratio: Double
        @OptionalConvexInt var lastSeen: Int64?
        @OptionalConvexFloat var missing: Float?
        var avatar: Data
    }

    /// A fresh suite per test, removed afterwards.
    func withDefaults(_ body: (UserDefaults) throws -> Void) throws {
        let suite = "dev.convexgateway.tests.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        try body(defaults)
    }

    @Test func roundTripKeepsInt64AndSpecialFloats() throws {
        try withDefaults { defaults in
            let settings = Settings(
                team: guardians, counter: .max, ratio: .nan, lastSeen: .min, missing: nil,
                avatar: Data([0xFF, 0]))
            try defaults.setObject(settings, forKey: "settings")
            let back = try defaults.getObject(forKey: "settings", castTo: Settings.self)
            #expect(back.team == guardians && back.counter == .max && back.ratio.isNaN && back.lastSeen == .min)
            #expect(back.missing == nil && back.avatar == Data([0xFF, 0]))
            // Stored as Convex JSON.
            let stored = try #require(defaults.data(forKey: "settings"))
            #expect(try ConvexValue(convexJSON: stored)["counter"] == .int64(.max))
        }
    }

    @Test func errorsCarryTheSeedDescriptions() throws {
        try withDefaults { defaults in
            #expect(throws: ObjectSavableError.noValue) {
                try defaults.getObject(forKey: "nothing", castTo: Settings.self)
            }
            try defaults.setObject(["just": "text"], forKey: "other")
            #expect(throws: ObjectSavableError.unableToDecode) {
                try defaults.getObject(forKey: "other", castTo: Settings.self)
            }
            #expect(throws: ObjectSavableError.unableToEncode) { try defaults.setObject(["$bad": 1], forKey: "bad") }
            #expect(defaults.data(forKey: "bad") == nil)
        }
        #expect(ObjectSavableError.unableToEncode.localizedDescription == "Unable to encode object into data")
        #expect(ObjectSavableError.noValue.localizedDescription == "No data object found for the given key")
        #expect(ObjectSavableError.unableToDecode.localizedDescription == "Unable to decode object into given type")
    }
}
