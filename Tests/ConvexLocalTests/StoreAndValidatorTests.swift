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

@Suite struct ValidatorTests {
    @Test(arguments: [
        (Validator.int64, ConvexValue.float64(1), "Value does not match validator.\nValue: 1\nValidator: v.int64()"),
        (.string, .int64(5), "Value does not match validator.\nValue: 5n\nValidator: v.string()"),
        (
            .array(.boolean), .array([true, "x"]),
            "Value does not match validator.\nPath: [1]\nValue: \"x\"\nValidator: v.boolean()"
        ),
        (
            .union([.string, .null]), .float64(2.5),
            "Value does not match validator.\nValue: 2.5\nValidator: v.union(v.string(), v.null())"
        ),
        (.literal("a"), .string("b"), "Value does not match validator.\nValue: \"b\"\nValidator: v.literal(\"a\")"),
    ])
    func mismatchMessages(validator: Validator, value: ConvexValue, message: String) {
        #expect(validator.check(value, path: "", store: nil)?.message == message)
    }

    @Test func objectFields() {
        let v: [String: Validator] = ["x": .int64, "y": .optional(.string)]
        #expect(Validator.validateArgs(["x": .int64(1)], against: v, store: nil) == nil)
        #expect(Validator.validateArgs(["x": .int64(1), "y": "s"], against: v, store: nil) == nil)
        #expect(
            Validator.validateArgs([:], against: v, store: nil)?.message.hasPrefix(
                "Object is missing the required field `x`.") == true)
        #expect(
            Validator.validateArgs(["x": .int64(1), "z": 1.0], against: v, store: nil)?.message.hasPrefix(
                "Object contains extra field `z`") == true)
        #expect(
            Validator.validateArgs(["x": .int64(1), "y": 1.0], against: v, store: nil)?.message.contains("Path: .y")
                == true)
        #expect(Validator.any.check(.bytes(Data([1])), path: "", store: nil) == nil)
    }

    @Test func idValidatorChecksTheTable() throws {
        let store = DocumentStore()
        let (id, _, _) = try store.write { try $0.insert("users", [:]) }
        #expect(Validator.id("users").check(.string(id), path: "", store: store.snapshot) == nil)
        #expect(
            Validator.id("teams").check(.string(id), path: "", store: store.snapshot)?.message.contains(
                "from table `users`") == true)
    }

    @Test func specJSON() {
        #expect(
            Validator.object(["a": .optional(.int64)]).specJSON
                == ["type": "object", "value": ["a": ["fieldType": ["type": "bigint"], "optional": true]]])
        #expect(Validator.id("t").specJSON == ["type": "id", "tableName": "t"])
    }
}

@Suite struct HTTPAPIFormatTests {
    let value: ConvexValue = [
        "i": .int64(-7), "b": .bytes(Data([0, 1, 0xFF])), "nan": .float64(.nan), "inf": .float64(-.infinity),
        "z": .float64(-0.0), "f": 2.0, "s": "x",
    ]

    @Test func renderings() {
        #expect(
            String(decoding: HTTPAPIFormat.json.render(value), as: UTF8.self)
                == #"{"b":"AAH/","f":2.0,"i":"-7","inf":"-Infinity","nan":"NaN","s":"x","z":-0.0}"#)
        #expect(
            String(decoding: HTTPAPIFormat.exportJSON.render(value), as: UTF8.self)
                == #"{"b":{"$bytes":"AAH/"},"f":2.0,"i":-7,"inf":{"$float":"AAAAAAAA8P8="},"nan":{"$float":"AAAAAAAA+H8="},"s":"x","z":-0.0}"#
        )
        #expect(HTTPAPIFormat.convexEncodedJSON.render(value) == value.convexJSON())
    }

    @Test(arguments: [
        (nil, HTTPAPIFormat.json), ("python-0.8.1", .json), ("python-0.5.0", .convexEncodedJSON),
        ("npm-1.4.1", .convexEncodedJSON),
        ("npm-1.4.2", .json), ("npm-cli-1.0.0", .json), ("rust-0.10.4", .json), ("weird", .json),
    ])
    func defaultFormats(header: String?, expected: HTTPAPIFormat) {
        #expect(HTTPAPIFormat.defaultFormat(convexClient: header) == expected)
    }
}
