import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Testing

@testable import ConvexLocal

@Suite struct DocumentStoreTests {
    @Test func commitTimestampsIncreaseAndFollowTheWallClock() throws {
        let store = DocumentStore()
        let start = store.snapshot.ts
        #expect(start.nanoseconds > 1_700_000_000_000_000_000, "wall-clock nanoseconds")
        var last = start
        for i in 0..<50 {
            let (_, ts, written) = try store.write { try $0.insert("t", ["i": .float64(Double(i))]) }
            #expect(ts > last)
            #expect(written == ["t"])
            last = ts
        }
        // A read-only transaction commits nothing.
        let (_, ts, written) = try store.write { _ in 1 }
        #expect(ts == last && written.isEmpty)
    }

    @Test func documentsHaveSystemFieldsAndScansKeepCreationOrder() throws {
        let store = DocumentStore()
        let (ids, _, _) = try store.write { t in try (0..<5).map { try t.insert("notes", ["n": .float64(Double($0))]) }
        }
        let snapshot = store.snapshot
        let docs = snapshot.scan("notes", order: .ascending)
        #expect(docs.map { $0["_id"] } == ids.map { .string($0) })
        #expect(snapshot.scan("notes", order: .descending).map { $0["_id"] } == ids.reversed().map { .string($0) })
        var previous = -1.0
        for doc in docs {
            guard case .float64(let created)? = doc["_creationTime"] else { Issue.record("no _creationTime"); continue }
            #expect(created > previous)
            previous = created
        }
        #expect(ids.allSatisfy { $0.count == 32 })
    }

    @Test func patchReplaceDeleteAndFailedTransactions() throws {
        let store = DocumentStore()
        let (id, _, _) = try store.write { try $0.insert("t", ["a": 1.0, "b": 2.0]) }
        _ = try store.write { try $0.patch(id, ["a": 5.0, "c": "x"], removing: ["b"]) }
        #expect(store.snapshot.get(id)?["a"] == 5.0)
        #expect(store.snapshot.get(id)?["b"] == nil)
        #expect(store.snapshot.get(id)?["c"] == "x")
        _ = try store.write { try $0.replace(id, ["z": true]) }
        #expect(store.snapshot.get(id).map { Set($0.keys) } == ["_id", "_creationTime", "z"])
        // A throwing transaction leaves no trace.
        #expect(throws: FunctionCallError.self) {
            try store.write { t in
                try t.delete(id)
                throw FunctionCallError.userError("abort")
            }
        }
        #expect(store.snapshot.get(id) != nil)
        _ = try store.write { try $0.delete(id) }
        #expect(store.snapshot.get(id) == nil)
        #expect(throws: FunctionCallError.self) { try store.write { try $0.delete(id) } }
        #expect(throws: FunctionCallError.self) { try store.write { try $0.insert("bad name", [:]) } }
        #expect(throws: FunctionCallError.self) { try store.write { try $0.insert("t", ["_x": 1.0]) } }
    }
}
