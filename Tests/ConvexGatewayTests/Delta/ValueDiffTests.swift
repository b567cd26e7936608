import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

/// The operations ``ValueDiff`` makes for the changes a live query sees most: one document of a list inserted,
/// changed, removed or moved is one operation, wherever it is.
@Suite struct ValueDiffTests {
    static func document(_ id: Int, text: String? = nil) -> ConvexValue {
        [
            "_id": .string("id\(id)"), "_creationTime": .float64(1_700_000_000_000 + Double(id)),
            "text": .string(text ?? "item \(id)"),
        ]
    }

    /// A list of `count` documents, newest first (as `items:list` returns them).
    static func list(_ count: Int) -> [ConvexValue] { (0..<count).reversed().map { document($0) } }

    static func patch(_ old: ConvexValue, _ new: ConvexValue, mode: OutputFormat = .plain) -> String {
        String(
            decoding: JSONPatch.render(ValueDiff.operations(from: old, to: new)) { $0.json(mode: mode) }!, as: UTF8.self
        )
    }

    @Test func aDocumentInsertedAtTheFrontIsOneAdd() {
        let old = Self.list(1000)
        let new = [Self.document(1000)] + old
        #expect(ValueDiff.operations(from: .array(old), to: .array(new)) == [.add(path: [.index(0)], value: new[0])])
    }

    @Test func aDocumentRemovedOrChangedIsOneOperation() {
        var list = Self.list(1000)
        let removed = list.remove(at: 500)
        _ = removed
        #expect(
            ValueDiff.operations(from: .array(Self.list(1000)), to: .array(list)) == [.remove(path: [.index(500)])])
        var changed = Self.list(1000)
        changed[10] = Self.document(989, text: "edited")
        #expect(
            Self.patch(.array(Self.list(1000)), .array(changed))
                == #"[{"op":"replace","path":"/10/text","value":"edited"}]"#)
    }

    @Test func aDocumentMovedIsOneMove() {
        var moved = Self.list(100)
        moved.insert(moved.remove(at: 70), at: 3)
        #expect(
            ValueDiff.operations(from: .array(Self.list(100)), to: .array(moved)) == [
                .move(from: [.index(70)], path: [.index(3)])
            ])
    }

    @Test func arraysWithoutIDsKeepTheirCommonEnds() {
        let old: ConvexValue = [1, 2, 3, 4, 5]
        #expect(Self.patch(old, [1, 2, 9, 4, 5]) == #"[{"op":"replace","path":"/2","value":9}]"#)
        #expect(Self.patch(old, [1, 2, 3, 3.5, 4, 5]) == #"[{"op":"add","path":"/3","value":3.5}]"#)
        #expect(
            Self.patch(old, [1, 5])
                == #"[{"op":"remove","path":"/1"},{"op":"remove","path":"/1"},{"op":"remove","path":"/1"}]"#)
        // Documents with a repeated `_id` are not matched by id.
        let twins: ConvexValue = [["_id": "a", "n": 1], ["_id": "a", "n": 2]]
        #expect(
            Self.patch(twins, [["_id": "a", "n": 1], ["_id": "a", "n": 3]])
                == #"[{"op":"replace","path":"/1/n","value":3}]"#)
    }

    @Test func keysAreEscapedAsJSONPointerSays() {
        let old: ConvexValue = ["a/b": 1, "m~n": 2, "gone": true]
        let new: ConvexValue = ["a/b": 3, "m~n": 2, "new": "x"]
        #expect(
            Self.patch(old, new)
                == #"[{"op":"remove","path":"/gone"},{"op":"replace","path":"/a~1b","value":3},{"op":"add","path":"/new","value":"x"}]"#
        )
    }

    @Test func valuesAreRenderedInTheStreamsOutputMode() {
        let old: ConvexValue = ["n": .int64(1), "f": .float64(1)]
        let new: ConvexValue = ["n": .int64(2), "f": .float64(.nan)]
        #expect(
            Self.patch(old, new, mode: .clean)
                == #"[{"op":"replace","path":"/f","value":"NaN"},{"op":"replace","path":"/n","value":"2"}]"#)
        #expect(Self.patch(old, new, mode: .encoded).contains(#"{"$integer":"AgAAAAAAAAA="}"#))
        // Exact comparison: -0.0 is not 0.0, and an int64 is not a float64.
        #expect(
            Self.patch(["x": .float64(0)], ["x": .float64(-0.0)]) == #"[{"op":"replace","path":"/x","value":-0.0}]"#)
        #expect(Self.patch([.int64(1)], [.float64(1)]) == #"[{"op":"replace","path":"/0","value":1.0}]"#)
        #expect(Self.patch(.float64(.nan), .float64(.nan)) == "[]")
    }

    @Test func aPatchIsMadeOnlyWhenSmallerThanHalfTheValue() {
        func current(_ value: ConvexValue, _ hash: ContentHash) -> CurrentResult {
            CurrentResult(
                id: "1-\(String(hash.value, radix: 16))", version: 1, hash: hash, result: .value(value))
        }
        let old = ConvexValue.array(Self.list(1000))
        let inserted = ConvexValue.array([Self.document(1000)] + Self.list(1000))
        let body = inserted.json(mode: .plain)
        let patch = ValueDelta.patch(from: current(old, 0xa), to: current(inserted, 0xb), body: body) {
            $0.json(mode: .plain)
        }
        #expect(
            patch.map { String(decoding: $0.fields, as: UTF8.self) }?.hasPrefix(
                #""base":"a","v":"b","ops":[{"op":"add""#) == true)
        // Every element changed: the patch is bigger than half the value, so the full value goes instead.
        let renumbered = ConvexValue.array((0..<1000).map { ["_id": .string("other\($0)"), "text": "x"] })
        #expect(
            ValueDelta.patch(
                from: current(old, 1), to: current(renumbered, 2), body: renumbered.json(mode: .plain)
            ) { $0.json(mode: .plain) } == nil)
        // A failure on either side: no patch.
        let failure = CurrentResult(
            id: "2-3", version: 2, hash: 3, result: .failure(.unauthenticated("expired")))
        #expect(ValueDelta.patch(from: failure, to: current(inserted, 4), body: body) { $0.json(mode: .plain) } == nil)
    }
}
