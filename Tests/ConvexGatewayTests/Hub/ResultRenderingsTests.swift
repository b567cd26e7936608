import Testing

@testable import ConvexGateway

/// What is made of one result for its readers, on its own: one update per output mode, one patch per mode.
@Suite struct ResultRenderingsTests {
    static let current = CurrentResult(id: "1-a", version: 1, hash: 0xA, result: .value("a"))

    @Test func eachOutputModeIsMadeOnceAndItsEventFramedOnce() {
        let renderings = ResultRenderings()
        var made = 0
        func make() -> SubscriptionUpdate {
            made += 1
            return SubscriptionUpdate(current: Self.current, body: Array("\"a\"".utf8))
        }
        let plain = renderings.update(.plain, make: make)
        let again = renderings.update(.plain, make: make)
        let encoded = renderings.update(.encoded, make: make)
        #expect(made == 2, "made once per output mode")
        let event = plain.event { Array("plain".utf8) }
        #expect(again.event { fatalError("framed again") } == event, "every stream in one mode sends the same bytes")
        #expect(encoded.event { Array("encoded".utf8) } == Array("encoded".utf8))
        #expect(renderings.count == 2)
    }

    @Test func aPatchIsAskedForOncePerModeAndKeptWithItsUpdate() {
        let renderings = ResultRenderings()
        var asked = 0
        let make = { SubscriptionUpdate(current: Self.current, body: Array("\"a\"".utf8)) }
        let values = renderings.update(.plain, make: make)
        #expect(values.patch == nil)
        let patch = ValuePatch(base: 0x9, result: 0xA, fields: Array(#""ops":[]"#.utf8))
        func asking(_ made: ValuePatch?) -> (SubscriptionUpdate) -> ValuePatch? {
            { _ in
                asked += 1
                return made
            }
        }
        let first = renderings.update(.plain, patch: asking(patch), make: make)
        let second = renderings.update(.plain, patch: asking(nil), make: make)
        #expect(asked == 1, "a patch is made once per change and mode")
        #expect(first.patch?.base == 0x9 && second.patch?.base == 0x9)
        #expect(
            renderings.update(.plain, make: make).patch?.base == 0x9, "the patch joins the update every stream shares")
    }

    @Test func aNewResultOfAnEntryStartsWithNothingMade() throws {
        var entry = HubEntryTests.entry()
        let updated = entry.update(to: HubEntryTests.result("a", hash: 0xA), wallMilliseconds: 1)
        let first = try #require(updated)
        _ = first.renderings.update(.plain) { SubscriptionUpdate(current: first.current, body: [1]) }
        #expect(entry.renderings === first.renderings, "a GET reads what the streams made")
        let changed = entry.update(to: HubEntryTests.result("b", hash: 0xB), wallMilliseconds: 2)
        let second = try #require(changed)
        #expect(second.renderings !== first.renderings && second.renderings.count == 0)
        #expect(first.renderings.count == 1, "a delivery still under way keeps what was made of its result")
    }
}
