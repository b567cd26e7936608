import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Testing

@testable import ConvexLocal

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
