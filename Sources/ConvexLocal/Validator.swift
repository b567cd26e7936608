import ConvexValues
import Foundation

/// An argument or return validator, with Convex's `v.*` vocabulary.
///
/// `.optional` is meaningful as an object field's validator (the field may be absent).
public indirect enum Validator: Sendable, Hashable {
    case string
    case float64
    case int64
    case boolean
    case bytes
    case null
    case any
    /// A document id of the named table.
    case id(String)
    case array(Validator)
    case object([String: Validator])
    case optional(Validator)
    case union([Validator])
    case literal(ConvexValue)
    /// `v.record(keys, values)`: an object whose keys match `keys` (a string-like validator) and values `values`.
    case record(keys: Validator, values: Validator)
}

extension Validator: CustomStringConvertible {
    /// The validator as Convex prints it, e.g. `v.object({a: v.int64(), b: v.optional(v.string())})`.
    public var description: String {
        switch self {
        case .string: "v.string()"
        case .float64: "v.float64()"
        case .int64: "v.int64()"
        case .boolean: "v.boolean()"
        case .bytes: "v.bytes()"
        case .null: "v.null()"
        case .any: "v.any()"
        case .id(let table): "v.id(\"\(table)\")"
        case .array(let element): "v.array(\(element))"
        case .object(let fields):
            "v.object({" + fields.keys.sorted().map { "\($0): \(fields[$0]!)" }.joined(separator: ", ") + "})"
        case .optional(let inner): "v.optional(\(inner))"
        case .union(let members): "v.union(" + members.map(\.description).joined(separator: ", ") + ")"
        case .literal(let value): "v.literal(\(displayValue(value)))"
        case .record(let keys, let values): "v.record(\(keys), \(values))"
        }
    }
}

/// A failed validation, phrased as Convex phrases it.
struct ValidationFailure: Error, Equatable {
    let message: String
}

extension Validator {
    /// Checks named arguments against an args validator (the fields of `v.object`).
    static func validateArgs(
        _ args: [String: ConvexValue], against fields: [String: Validator],
        store: StoreSnapshot?
    ) -> ValidationFailure? {
        Validator.object(fields).check(.object(args), path: "", store: store)
    }

    /// `nil` when `value` matches; otherwise the first mismatch.
    func check(_ value: ConvexValue, path: String, store: StoreSnapshot?) -> ValidationFailure? {
        let noMatch = ValidationFailure(
            message: "Value does not match validator.\n"
                + (path.isEmpty ? "" : "Path: \(path)\n") + "Value: \(displayValue(value))\nValidator: \(self)")
        switch (self, value) {
        case (.any, _): return nil
        case (.string, .string), (.float64, .float64), (.int64, .int64), (.boolean, .boolean), (.bytes, .bytes),
            (.null, .null):
            return nil
        case (.id(let table), .string(let id)):
            if let store, let actual = store.table(ofId: id), actual != table {
                return ValidationFailure(
                    message:
                        "Found ID \"\(id)\" from table `\(actual)`, which does not match the table name in validator `\(self)`."
                        + (path.isEmpty ? "" : "\nPath: \(path)"))
            }
            if id.isEmpty { return noMatch }
            return nil
        case (.array(let element), .array(let items)):
            for (i, item) in items.enumerated() {
                if let failure = element.check(item, path: "\(path)[\(i)]", store: store) { return failure }
            }
            return nil
        case (.object(let fields), .object(let object)):
            for key in fields.keys.sorted() {
                let fieldValidator = fields[key]!
                if let v = object[key] {
                    let inner: Validator =
                        if case .optional(let wrapped) = fieldValidator { wrapped } else { fieldValidator }
                    if let failure = inner.check(v, path: "\(path).\(key)", store: store) { return failure }
                } else if case .optional = fieldValidator {
                    continue
                } else {
                    return ValidationFailure(
                        message:
                            "Object is missing the required field `\(key)`. Consider wrapping the field validator in `v.optional(...)` if this is expected.\n\n"
                            + (path.isEmpty ? "" : "Path: \(path)\n")
                            + "Object: \(displayValue(value))\nValidator: \(self)")
                }
            }
            for key in object.keys.sorted() where fields[key] == nil {
                return ValidationFailure(
                    message: "Object contains extra field `\(key)` that is not in the validator.\n\n"
                        + (path.isEmpty ? "" : "Path: \(path)\n") + "Object: \(displayValue(value))\nValidator: \(self)"
                )
            }
            return nil
        case (.optional(let inner), _):
            return inner.check(value, path: path, store: store)
        case (.union(let members), _):
            for member in members where member.check(value, path: path, store: store) == nil { return nil }
            return noMatch
        case (.literal(let expected), _):
            return value == expected ? nil : noMatch
        case (.record(let keys, let values), .object(let object)):
            for key in object.keys.sorted() {
                if keys.check(.string(key), path: path, store: store) != nil { return noMatch }
                if let failure = values.check(object[key]!, path: "\(path).\(key)", store: store) { return failure }
            }
            return nil
        default:
            return noMatch
        }
    }

    /// The validator in the JSON form `npx convex function-spec` prints.
    public var specJSON: ConvexValue {
        switch self {
        case .string: return ["type": "string"]
        case .float64: return ["type": "number"]
        case .int64: return ["type": "bigint"]
        case .boolean: return ["type": "boolean"]
        case .bytes: return ["type": "bytes"]
        case .null: return ["type": "null"]
        case .any: return ["type": "any"]
        case .id(let table): return ["type": "id", "tableName": .string(table)]
        case .array(let element): return ["type": "array", "value": element.specJSON]
        case .object(let fields):
            var value: [String: ConvexValue] = [:]
            for (key, validator) in fields {
                if case .optional(let inner) = validator {
                    value[key] = ["fieldType": inner.specJSON, "optional": true]
                } else {
                    value[key] = ["fieldType": validator.specJSON, "optional": false]
                }
            }
            return ["type": "object", "value": .object(value)]
        case .optional(let inner):
            return inner.specJSON
        case .union(let members): return ["type": "union", "value": .array(members.map(\.specJSON))]
        case .literal(let value): return ["type": "literal", "value": value]
        case .record(let keys, let values):
            return [
                "type": "record", "keys": keys.specJSON, "values": ["fieldType": values.specJSON, "optional": false],
            ]
        }
    }
}

/// A value as Convex prints it in error messages: JSON-like, int64 with an `n` suffix.
func displayValue(_ value: ConvexValue) -> String {
    switch value {
    case .null: return "null"
    case .int64(let i): return "\(i)n"
    case .float64(let d):
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        if d == 0 && d.sign == .minus { return "-0" }
        if d.rounded() == d && abs(d) < 1e21 { return String(format: "%.0f", d) }
        return "\(d)"
    case .boolean(let b): return b ? "true" : "false"
    case .string(let s): return ConvexValue.string(s).convexJSONString
    case .bytes(let data): return "ArrayBuffer(\(data.count))"
    case .array(let items): return "[" + items.map(displayValue).joined(separator: ", ") + "]"
    case .object(let fields):
        return "{" + fields.keys.sorted().map { "\($0): \(displayValue(fields[$0]!))" }.joined(separator: ", ") + "}"
    }
}
