import Foundation
import Testing

@testable import ConvexValues

/// The examples of docs/values.md, so the page stays true.
@Suite struct ValuesDocumentationTests {
    struct Team: Codable, Equatable {
        let name: String
        let uniformColors: [String]
        @ConvexInt var wins: Int
        @ConvexInt var losses: Int
        @OptionalConvexFloat var ratio: Double?
    }

    @Test func outputModes() throws {
        let value: ConvexValue = ["name": "Guardians", "wins": 80, "ratio": 0.5]
        #expect(value.jsonString(mode: .plain) == #"{"name":"Guardians","ratio":0.5,"wins":80}"#)
        #expect(value.jsonString(mode: .clean) == #"{"name":"Guardians","ratio":0.5,"wins":"80"}"#)
        #expect(try ConvexJSONTranscoder.render(value.convexJSON(), mode: .plain) == value.json(mode: .plain))
        let input = try ConvexValue(plainJSON: Array(#"{"n": 5, "id": {"$integer": "BQAAAAAAAAA="}}"#.utf8))
        #expect(input == ["n": 5.0, "id": .int64(5)])
    }

    @Test func typedValues() throws {
        let value: ConvexValue = ["name": "Guardians", "uniformColors": ["blue"], "wins": 80, "losses": 60]
        let team = try ConvexDecoder().decode(Team.self, from: value)
        #expect(team.wins == 80 && team.ratio == nil)
        #expect(try ConvexDecoder().decode(Team.self, from: value.convexJSON()) == team)
        #expect(try ConvexValue(encoding: team) == value)
        #expect(try ConvexValue(encoding: ["division": "AL Central", "n": 5]) == ["division": "AL Central", "n": 5])
        #expect(try ConvexValue(encoding: ["n": 5]) == ["n": .int64(5)])
        #expect(try ConvexValue(encoding: [1.5, 2]) == [1.5, 2.0])
    }
}
