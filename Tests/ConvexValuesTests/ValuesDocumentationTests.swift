import Foundation
import Testing

@testable import ConvexValues

/// docs/values.md's examples, so the page stays true: the tests run them, and the page must show them as run here.
@Suite struct ValuesDocumentationTests {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/values.md")

    static let plainOutput = #"{"name":"Guardians","ratio":0.5,"wins":80}"#
    static let cleanOutput = #"{"name":"Guardians","ratio":0.5,"wins":"80"}"#
    static let plainInput = #"{"n": 5, "id": {"$integer": "BQAAAAAAAAA="}}"#

    /// Text of the page's examples that the tests below check, as the page shows it.
    static let shown = [
        #"let value: ConvexValue = ["name": "Guardians", "wins": 80, "ratio": 0.5]   // integer literals are int64"#,
        "value.jsonString(mode: .plain)   // " + plainOutput,
        "value.jsonString(mode: .clean)   // " + cleanOutput,
        "`" + plainInput + "` → `n` float64 5.0, `id` int64 5.",
        "    @ConvexInt var wins: Int            // int64 (JavaScript bigint); also Int32, Int64",
        "    @OptionalConvexFloat var ratio: Double?   // missing or null → nil; nil is omitted on encode",
        "let team = try ConvexDecoder().decode(BaseballTeam.self, from: value)       // from a ConvexValue",
        "let args = try ConvexValue(encoding: team)                                  // any Encodable",
        #"let mixed = try ConvexValue(encoding: ["division": "AL Central", "n": 5])"#,
    ]

    struct Team: Codable, Equatable {
        let name: String
        let uniformColors: [String]
        @ConvexInt var wins: Int
        @ConvexInt var losses: Int
        @OptionalConvexFloat var ratio: Double?
    }

    @Test func thePageShowsTheseExamples() throws {
        let page = try String(contentsOf: Self.page, encoding: .utf8)
        let missing = Self.shown.filter { !page.contains($0) }
        #expect(missing.isEmpty, "docs/values.md no longer shows what ValuesDocumentationTests checks: \(missing)")
    }

    @Test func outputModes() throws {
        let value: ConvexValue = ["name": "Guardians", "wins": 80, "ratio": 0.5]
        #expect(value.jsonString(mode: .plain) == Self.plainOutput)
        #expect(value.jsonString(mode: .clean) == Self.cleanOutput)
        #expect(try ConvexJSONTranscoder.render(value.convexJSON(), mode: .plain) == value.json(mode: .plain))
        let input = try ConvexValue(plainJSON: Array(Self.plainInput.utf8))
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
