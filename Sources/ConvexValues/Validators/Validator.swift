import Foundation

/// An argument or return validator, with Convex's `v.*` vocabulary: what a local deployment's functions declare, and
/// what a deployment's function spec describes (the JSON `npx convex function-spec` prints) to the gateway.
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
        case .literal(let value): "v.literal(\(value.displayText))"
        case .record(let keys, let values): "v.record(\(keys), \(values))"
        }
    }
}

extension Validator {
    /// Whether this is `v.optional(…)`: as an object field's validator, the field may be absent.
    public var isOptional: Bool {
        if case .optional = self { true } else { false }
    }

    /// The validator inside `v.optional(…)`, or this one.
    public var unwrappingOptional: Validator {
        if case .optional(let inner) = self { inner } else { self }
    }

    /// Whether `value` matches in shape, as a deployment checks it except that an id is only checked to be a string
    /// (the table of an id is the deployment's to know).
    public func accepts(_ value: ConvexValue) -> Bool {
        switch (self, value) {
        case (.any, _): return true
        case (.string, .string), (.id, .string), (.float64, .float64), (.int64, .int64), (.boolean, .boolean),
            (.bytes, .bytes), (.null, .null):
            return true
        case (.array(let element), .array(let items)):
            return items.allSatisfy(element.accepts)
        case (.object(let fields), .object(let object)):
            for (name, field) in fields {
                if let v = object[name] {
                    if !field.unwrappingOptional.accepts(v) { return false }
                } else if !field.isOptional {
                    return false
                }
            }
            return object.keys.allSatisfy { fields[$0] != nil }
        case (.optional(let inner), _):
            return inner.accepts(value)
        case (.union(let members), _):
            return members.contains { $0.accepts(value) }
        case (.literal(let expected), _):
            return expected == value
        case (.record(let keys, let values), .object(let object)):
            return object.allSatisfy { keys.accepts(.string($0.key)) && values.accepts($0.value) }
        default:
            return false
        }
    }
}

// MARK: Function spec JSON

extension Validator {
    /// The validator in the JSON form `npx convex function-spec` prints: `{"type":"bigint"}`,
    /// `{"type":"object","value":{"x":{"fieldType":…,"optional":false}}}`, …
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

    /// Reads validator JSON (``specJSON``). Unknown or malformed shapes read as `.any`, so a spec from a newer
    /// deployment never makes a reader refuse what it would have passed through before.
    public init(specJSON value: ConvexValue) {
        guard case .string(let type)? = value["type"] else {
            self = .any
            return
        }
        switch type {
        case "string": self = .string
        case "number", "float64": self = .float64
        case "bigint", "int64": self = .int64
        case "boolean": self = .boolean
        case "bytes": self = .bytes
        case "null": self = .null
        case "id":
            if case .string(let table)? = value["tableName"] { self = .id(table) } else { self = .string }
        case "array":
            self = value["value"].map { .array(Validator(specJSON: $0)) } ?? .array(.any)
        case "object":
            guard case .object(let raw)? = value["value"] else {
                self = .any
                return
            }
            var fields: [String: Validator] = [:]
            for (name, field) in raw {
                let validator = field["fieldType"].map { Validator(specJSON: $0) } ?? .any
                fields[name] = field["optional"] == .boolean(true) ? .optional(validator) : validator
            }
            self = .object(fields)
        case "union":
            guard case .array(let members)? = value["value"] else {
                self = .any
                return
            }
            self = .union(members.map { Validator(specJSON: $0) })
        case "literal":
            self = value["value"].map { .literal($0) } ?? .any
        case "record":
            let keys = value["keys"].map { Validator(specJSON: $0) } ?? .string
            let valuesJSON = value["values"]?["fieldType"] ?? value["values"]
            self = .record(keys: keys, values: valuesJSON.map { Validator(specJSON: $0) } ?? .any)
        default: self = .any
        }
    }
}

extension ConvexValue {
    /// The value as Convex prints it in error messages: JSON-like, int64 with an `n` suffix.
    public var displayText: String {
        switch self {
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
        case .array(let items): return "[" + items.map(\.displayText).joined(separator: ", ") + "]"
        case .object(let fields):
            return "{" + fields.keys.sorted().map { "\($0): \(fields[$0]!.displayText)" }.joined(separator: ", ") + "}"
        }
    }
}
