import Foundation

/// Encodes `Encodable` values as Convex values, the way the official Swift client sends arguments:
/// `Int`, `Int32`, `Int64` (and the other fixed-width integers) become int64, `Double` and `Float` float64
/// (NaN, ±Infinity and −0.0 included), `Data` bytes, `nil` null, structs and `[String: T]` objects, sequences arrays.
///
/// Object keys must be valid Convex field names and the result must be within Convex's limits; otherwise encoding
/// throws `EncodingError.invalidValue` whose description names the JSON path.
public struct ConvexEncoder: Sendable {
    /// Contextual information for `encode(to:)` implementations.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    public init() {}

    /// Encodes `value` as a `ConvexValue`.
    /// - Throws: `EncodingError` when a key is not a valid field name, a number does not fit int64, the value breaks a
    ///   Convex limit, or the value's own `encode(to:)` throws.
    public func encodeToValue<T: Encodable>(_ value: T) throws -> ConvexValue {
        if let direct = directValue(value) { return try checked(direct) }
        let encoder = ConvexEncoderImpl(codingPath: [], userInfo: userInfo)
        try value.encode(to: encoder)
        guard let node = encoder.node else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        return try checked(node.materialize())
    }

    /// Encodes `value` as Convex JSON bytes.
    /// - Throws: see ``encodeToValue(_:)``.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try encodeToValue(value).convexJSON()
    }

    private func checked(_ value: ConvexValue) throws -> ConvexValue {
        do {
            try value.checkLimits()
        } catch {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: error.description, underlyingError: error))
        }
        return value
    }
}

extension ConvexValue {
    /// Encodes any `Encodable` value with ``ConvexEncoder``: `ConvexValue(encoding: team)`.
    /// - Throws: see ``ConvexEncoder/encodeToValue(_:)``.
    public init(encoding value: some Encodable) throws {
        self = try ConvexEncoder().encodeToValue(value)
    }

    /// Encodes function arguments written as a dictionary literal of mixed types:
    /// `try ConvexValue(encoding: ["division": "AL Central", "n": 5, "limit": nil])`.
    /// - Throws: see ``ConvexEncoder/encodeToValue(_:)``.
    public init(encoding arguments: [String: (any ConvexEncodable)?]) throws {
        self = try ConvexEncoder().encodeToValue(MixedArguments(arguments: arguments))
    }
}

/// A dictionary of mixed argument types, encoded field by field so errors carry the full path.
private struct MixedArguments: Encodable {
    let arguments: [String: (any ConvexEncodable)?]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ConvexCodingKey.self)
        for (key, argument) in arguments {
            if let argument {
                try container.encode(argument, forKey: ConvexCodingKey(key))
            } else {
                try container.encodeNil(forKey: ConvexCodingKey(key))
            }
        }
    }
}

/// Types that can be sent as Convex function arguments, as in the official Swift client, so that mixed
/// dictionaries such as `["division": "AL Central", "n": 5]` type-check as `[String: (any ConvexEncodable)?]`.
/// Any `Encodable` struct can also be encoded with ``ConvexValue/init(encoding:)-(Encodable)``.
public protocol ConvexEncodable: Encodable, Sendable {}

extension Int: ConvexEncodable {}
extension Int8: ConvexEncodable {}
extension Int16: ConvexEncodable {}
extension Int32: ConvexEncodable {}
extension Int64: ConvexEncodable {}
extension UInt8: ConvexEncodable {}
extension UInt16: ConvexEncodable {}
extension UInt32: ConvexEncodable {}
extension Double: ConvexEncodable {}
extension Float: ConvexEncodable {}
extension Bool: ConvexEncodable {}
extension String: ConvexEncodable {}
extension Data: ConvexEncodable {}
extension ConvexValue: ConvexEncodable {}
extension Optional: ConvexEncodable where Wrapped: ConvexEncodable {}
extension Array: ConvexEncodable where Element: ConvexEncodable {}
extension Dictionary: ConvexEncodable where Key == String, Value: ConvexEncodable {}

/// A coding key for paths built by the encoder and decoder.
struct ConvexCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(_ string: String) {
        stringValue = string
        intValue = nil
    }
    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
    static let superKey = ConvexCodingKey("super")
}

/// The JSON path (`$.teams[3].wins`) of a coding path: integer keys from unkeyed containers become indices.
func jsonPath(_ codingPath: [any CodingKey]) -> String {
    renderPath(codingPath.map { key -> PathComponent in
        if let index = key.intValue, key is ConvexCodingKey { return .index(index) }
        return .key(key.stringValue)
    })
}

/// Values the encoder stores without asking them to encode themselves.
private func directValue<T: Encodable>(_ value: T) -> ConvexValue? {
    switch value {
    case let v as ConvexValue: return v
    case let v as Data: return .bytes(v)
    default: return nil
    }
}

/// A partially built value; containers are references so nested containers can keep writing into them.
final class EncodingNode {
    enum Kind {
        case value(ConvexValue)
        case object([String: EncodingNode])
        case array([EncodingNode])
    }

    var kind: Kind
    init(_ kind: Kind) { self.kind = kind }

    func materialize() -> ConvexValue {
        switch kind {
        case .value(let v): return v
        case .object(let fields): return .object(fields.mapValues { $0.materialize() })
        case .array(let items): return .array(items.map { $0.materialize() })
        }
    }
}

final class ConvexEncoderImpl: Encoder {
    let codingPath: [any CodingKey]
    let sendableUserInfo: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }
    var node: EncodingNode?

    init(codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable], node: EncodingNode? = nil) {
        self.codingPath = codingPath
        self.sendableUserInfo = userInfo
        self.node = node
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let target: EncodingNode
        if let node, case .object = node.kind {
            target = node
        } else if let node {
            node.kind = .object([:])
            target = node
        } else {
            target = EncodingNode(.object([:]))
            node = target
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self, target: target))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let target: EncodingNode
        if let node, case .array = node.kind {
            target = node
        } else if let node {
            node.kind = .array([])
            target = node
        } else {
            target = EncodingNode(.array([]))
            node = target
        }
        return UnkeyedContainer(encoder: self, target: target)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: self) }

    func set(_ value: ConvexValue) {
        if let node { node.kind = .value(value) } else { node = EncodingNode(.value(value)) }
    }

    /// Encodes a nested value at `key`, returning its node.
    func encodeNested<T: Encodable>(_ value: T, at key: any CodingKey) throws -> EncodingNode {
        let path = codingPath + [key]
        if let direct = directValue(value) { return EncodingNode(.value(direct)) }
        if let v = try primitive(value, path: path) { return EncodingNode(.value(v)) }
        let child = ConvexEncoderImpl(codingPath: path, userInfo: sendableUserInfo)
        try value.encode(to: child)
        return child.node ?? EncodingNode(.object([:]))
    }

    /// Numbers, strings and booleans, converted without a nested encoder.
    func primitive<T: Encodable>(_ value: T, path: [any CodingKey]) throws -> ConvexValue? {
        switch value {
        case let v as String: return .string(v)
        case let v as Bool: return .boolean(v)
        case let v as Int: return .int64(Int64(v))
        case let v as Int64: return .int64(v)
        case let v as Int32: return .int64(Int64(v))
        case let v as Double: return .float64(v)
        case let v as Float: return .float64(Double(v))
        case let v as Int8: return .int64(Int64(v))
        case let v as Int16: return .int64(Int64(v))
        case let v as UInt8: return .int64(Int64(v))
        case let v as UInt16: return .int64(Int64(v))
        case let v as UInt32: return .int64(Int64(v))
        case let v as UInt64: return try int64(v, path: path)
        case let v as UInt: return try int64(v, path: path)
        default: return nil
        }
    }

    func int64<T: BinaryInteger>(_ v: T, path: [any CodingKey]) throws -> ConvexValue {
        guard let exact = Int64(exactly: v) else {
            throw EncodingError.invalidValue(
                v,
                .init(codingPath: path,
                      debugDescription: "\(T.self) \(v) does not fit in a Convex int64 (at \(jsonPath(path)))"))
        }
        return .int64(exact)
    }

    func checkKey(_ key: any CodingKey) throws {
        if let problem = fieldNameProblem(key.stringValue) {
            let path = codingPath + [key]
            throw EncodingError.invalidValue(
                key.stringValue, .init(codingPath: path, debugDescription: "\(problem) (at \(jsonPath(path)))"))
        }
    }

    private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: ConvexEncoderImpl
        let target: EncodingNode
        var codingPath: [any CodingKey] { encoder.codingPath }

        func put(_ node: EncodingNode, _ key: Key) {
            if case .object(var fields) = target.kind {
                target.kind = .value(.null)  // release the old storage so the dictionary is uniquely referenced
                fields[key.stringValue] = node
                target.kind = .object(fields)
            }
        }

        mutating func encodeNil(forKey key: Key) throws {
            try encoder.checkKey(key)
            put(EncodingNode(.value(.null)), key)
        }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try encoder.checkKey(key)
            put(try encoder.encodeNested(value, at: key), key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            let node = EncodingNode(.object([:]))
            put(node, key)
            let child = ConvexEncoderImpl(codingPath: codingPath + [key], userInfo: encoder.sendableUserInfo, node: node)
            return child.container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let node = EncodingNode(.array([]))
            put(node, key)
            let child = ConvexEncoderImpl(codingPath: codingPath + [key], userInfo: encoder.sendableUserInfo, node: node)
            return child.unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { superEncoder(forKey: ConvexCodingKey.superKey) }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            superEncoder(forKey: key as any CodingKey)
        }

        private func superEncoder(forKey key: any CodingKey) -> any Encoder {
            let node = EncodingNode(.object([:]))
            if case .object(var fields) = target.kind {
                fields[key.stringValue] = node
                target.kind = .object(fields)
            }
            return ConvexEncoderImpl(codingPath: codingPath + [key], userInfo: encoder.sendableUserInfo, node: node)
        }
    }

    private struct UnkeyedContainer: UnkeyedEncodingContainer {
        let encoder: ConvexEncoderImpl
        let target: EncodingNode
        var codingPath: [any CodingKey] { encoder.codingPath }
        var count: Int {
            if case .array(let items) = target.kind { return items.count }
            return 0
        }

        func append(_ node: EncodingNode) {
            if case .array(var items) = target.kind {
                target.kind = .value(.null)
                items.append(node)
                target.kind = .array(items)
            }
        }

        mutating func encodeNil() throws { append(EncodingNode(.value(.null))) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            append(try encoder.encodeNested(value, at: ConvexCodingKey(index: count)))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let node = EncodingNode(.object([:]))
            let path = codingPath + [ConvexCodingKey(index: count)]
            append(node)
            return ConvexEncoderImpl(codingPath: path, userInfo: encoder.sendableUserInfo, node: node).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let node = EncodingNode(.array([]))
            let path = codingPath + [ConvexCodingKey(index: count)]
            append(node)
            return ConvexEncoderImpl(codingPath: path, userInfo: encoder.sendableUserInfo, node: node).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder {
            let node = EncodingNode(.object([:]))
            let path = codingPath + [ConvexCodingKey(index: count)]
            append(node)
            return ConvexEncoderImpl(codingPath: path, userInfo: encoder.sendableUserInfo, node: node)
        }
    }

    private struct SingleValueContainer: SingleValueEncodingContainer {
        let encoder: ConvexEncoderImpl
        var codingPath: [any CodingKey] { encoder.codingPath }

        mutating func encodeNil() throws { encoder.set(.null) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            if let direct = directValue(value) {
                encoder.set(direct)
            } else if let v = try encoder.primitive(value, path: codingPath) {
                encoder.set(v)
            } else {
                try value.encode(to: encoder)
            }
        }
    }
}
