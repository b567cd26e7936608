import Foundation

/// A Convex value: one of the eight types a Convex deployment stores, accepts as arguments and returns.
///
/// Equality is exact: two `float64` values are equal when their bit patterns are equal, so `NaN`
/// equals a `NaN` with the same payload and `-0.0` differs from `0.0`. This is the identity that
/// Convex JSON preserves.
public enum ConvexValue: Sendable {
    case null
    case int64(Int64)
    case float64(Double)
    case boolean(Bool)
    case string(String)
    case bytes(Data)
    case array([ConvexValue])
    case object([String: ConvexValue])
}

extension ConvexValue: Hashable {
    public static func == (lhs: ConvexValue, rhs: ConvexValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.int64(let a), .int64(let b)): return a == b
        case (.float64(let a), .float64(let b)): return a.bitPattern == b.bitPattern
        case (.boolean(let a), .boolean(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.bytes(let a), .bytes(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .int64(let v): hasher.combine(1); hasher.combine(v)
        case .float64(let v): hasher.combine(2); hasher.combine(v.bitPattern)
        case .boolean(let v): hasher.combine(3); hasher.combine(v)
        case .string(let v): hasher.combine(4); hasher.combine(v)
        case .bytes(let v): hasher.combine(5); hasher.combine(v)
        case .array(let v): hasher.combine(6); hasher.combine(v)
        case .object(let v): hasher.combine(7); hasher.combine(v)
        }
    }
}

extension ConvexValue {
    /// The Convex type name, as Convex's validators and error messages spell it.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .int64: "int64"
        case .float64: "float64"
        case .boolean: "boolean"
        case .string: "string"
        case .bytes: "bytes"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The value's size by Convex's metric (`crates/value/src/lib.rs`): the figure the 32 MiB limit applies to.
    public var convexSize: Int {
        switch self {
        case .null, .boolean: return 1
        case .int64, .float64: return 9
        case .string(let s): return s.utf8.count + 2
        case .bytes(let b): return b.count + 2
        case .array(let items): return items.reduce(2) { $0 + $1.convexSize }
        case .object(let fields): return fields.reduce(2) { $0 + $1.key.utf8.count + 1 + $1.value.convexSize }
        }
    }

    /// Container depth: scalars 0, every array or object level adds one.
    public var nestingDepth: Int {
        switch self {
        case .array(let items): return 1 + (items.map(\.nestingDepth).max() ?? 0)
        case .object(let fields): return 1 + (fields.values.map(\.nestingDepth).max() ?? 0)
        default: return 0
        }
    }

    public subscript(key: String) -> ConvexValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    public subscript(index: Int) -> ConvexValue? {
        if case .array(let items) = self, items.indices.contains(index) { return items[index] }
        return nil
    }
}

/// Literals: `nil`, `true`, `"text"`, `1.5` (float64), `[…]`, `["key": …]`, and integer literals, which are
/// int64 as Swift `Int` arguments are in the official Swift client (`["n": 5]` sends `{"$integer":…}`);
/// write `5.0` for a float64.
extension ConvexValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByStringLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(floatLiteral value: Double) { self = .float64(value) }
    public init(arrayLiteral elements: ConvexValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, ConvexValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension ConvexValue: CustomStringConvertible {
    /// Convex JSON text of the value.
    public var description: String { String(decoding: convexJSON(), as: UTF8.self) }
}
