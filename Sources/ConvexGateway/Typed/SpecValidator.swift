import ConvexValues

/// A validator as a deployment's function spec describes it (Convex's validator JSON, as `npx convex function-spec`
/// prints it): `{"type":"bigint"}`, `{"type":"object","value":{"x":{"fieldType":…,"optional":false}}}`, ….
public indirect enum SpecValidator: Sendable, Hashable {
    case string
    case float64
    case int64
    case boolean
    case bytes
    case null
    case any
    /// A document id of the named table (a string on the wire).
    case id(table: String)
    case array(SpecValidator)
    /// Fields with their validators; `optional` fields may be absent.
    case object([String: Field])
    case union([SpecValidator])
    case literal(ConvexValue)
    case record(keys: SpecValidator, values: SpecValidator)

    public struct Field: Sendable, Hashable {
        public var validator: SpecValidator
        public var optional: Bool
        public init(_ validator: SpecValidator, optional: Bool = false) {
            self.validator = validator
            self.optional = optional
        }
    }

    /// Reads validator JSON. Unknown or malformed shapes read as `.any`, so a spec from a newer deployment never
    /// makes the gateway refuse what it would have passed through before.
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
            if case .string(let table)? = value["tableName"] { self = .id(table: table) } else { self = .string }
        case "array":
            self = value["value"].map { .array(SpecValidator(specJSON: $0)) } ?? .array(.any)
        case "object":
            guard case .object(let raw)? = value["value"] else {
                self = .any
                return
            }
            var fields: [String: Field] = [:]
            for (name, field) in raw {
                let validator = field["fieldType"].map { SpecValidator(specJSON: $0) } ?? .any
                fields[name] = Field(validator, optional: field["optional"] == .boolean(true))
            }
            self = .object(fields)
        case "union":
            guard case .array(let members)? = value["value"] else {
                self = .any
                return
            }
            self = .union(members.map { SpecValidator(specJSON: $0) })
        case "literal":
            self = value["value"].map { .literal($0) } ?? .any
        case "record":
            let keys = value["keys"].map { SpecValidator(specJSON: $0) } ?? .string
            let valuesJSON = value["values"]?["fieldType"] ?? value["values"]
            self = .record(keys: keys, values: valuesJSON.map { SpecValidator(specJSON: $0) } ?? .any)
        default: self = .any
        }
    }

    /// Whether `value` matches, as the deployment would check it (ids are only checked to be strings).
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
                    if !field.validator.accepts(v) { return false }
                } else if !field.optional {
                    return false
                }
            }
            return object.keys.allSatisfy { fields[$0] != nil }
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
