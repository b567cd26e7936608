import Foundation

/// Decodes `Decodable` types from Convex values with Convex's exact types: integer properties (`Int`, `Int32`,
/// `Int64`, …) read int64 only and must fit the property's type; `Double`/`Float` read float64 only (a plain JSON
/// number is float64); `Data` reads bytes. Errors are `DecodingError`s whose description names the JSON path, such
/// as `$.teams[3].wins`.
public struct ConvexDecoder: Sendable {
    /// Contextual information for `init(from:)` implementations.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    public init() {}

    /// Decodes a `T` from a value.
    /// - Throws: `DecodingError` naming the coding path and JSON path of the first mismatch.
    public func decode<T: Decodable>(_ type: T.Type, from value: ConvexValue) throws -> T {
        try ConvexDecoderImpl(value: value, codingPath: [], userInfo: userInfo).decodeValue(type)
    }

    /// Decodes a `T` from Convex JSON bytes.
    /// - Throws: `ConvexValueError` when the bytes are not valid Convex JSON, otherwise `DecodingError`.
    public func decode<T: Decodable>(_ type: T.Type, from convexJSON: some Collection<UInt8>) throws -> T {
        try decode(type, from: try ConvexValue(convexJSON: convexJSON))
    }
}

final class ConvexDecoderImpl: Decoder {
    let value: ConvexValue
    let codingPath: [any CodingKey]
    let sendableUserInfo: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    init(value: ConvexValue, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.value = value
        self.codingPath = codingPath
        self.sendableUserInfo = userInfo
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let fields) = value else {
            throw mismatch([String: ConvexValue].self, expected: "an object", value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, fields: fields))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            throw mismatch([ConvexValue].self, expected: "an array", value, codingPath)
        }
        return UnkeyedContainer(decoder: self, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueContainer(decoder: self) }

    func child(_ value: ConvexValue, _ key: any CodingKey) -> ConvexDecoderImpl {
        ConvexDecoderImpl(value: value, codingPath: codingPath + [key], userInfo: sendableUserInfo)
    }

    /// Decodes this decoder's value as `T`, converting primitives directly.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is ConvexValue.Type: return value as! T
        case is Data.Type:
            guard case .bytes(let data) = value else { throw mismatch(type, expected: "bytes", value, codingPath) }
            return data as! T
        case is String.Type:
            guard case .string(let s) = value else { throw mismatch(type, expected: "a string", value, codingPath) }
            return s as! T
        case is Bool.Type:
            guard case .boolean(let b) = value else { throw mismatch(type, expected: "a boolean", value, codingPath) }
            return b as! T
        case is Double.Type: return try float64(type) as! T
        case is Float.Type:
            let d = try float64(type)
            let f = Float(d)
            if d.isFinite && !f.isFinite {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: codingPath,
                    debugDescription: "Float64 \(d) does not fit in Float (at \(jsonPath(codingPath)))"))
            }
            return f as! T
        case is Int.Type: return try integer(Int.self) as! T
        case is Int64.Type: return try integer(Int64.self) as! T
        case is Int32.Type: return try integer(Int32.self) as! T
        case is Int16.Type: return try integer(Int16.self) as! T
        case is Int8.Type: return try integer(Int8.self) as! T
        case is UInt.Type: return try integer(UInt.self) as! T
        case is UInt64.Type: return try integer(UInt64.self) as! T
        case is UInt32.Type: return try integer(UInt32.self) as! T
        case is UInt16.Type: return try integer(UInt16.self) as! T
        case is UInt8.Type: return try integer(UInt8.self) as! T
        default: return try T(from: self)
        }
    }

    func float64(_ type: Any.Type) throws -> Double {
        guard case .float64(let d) = value else {
            throw mismatch(type, expected: "a float64", value, codingPath)
        }
        return d
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard case .int64(let v) = value else {
            throw mismatch(type, expected: "an int64", value, codingPath)
        }
        guard let exact = T(exactly: v) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: codingPath,
                debugDescription: "Int64 \(v) is out of range for \(T.self) (at \(jsonPath(codingPath)))"))
        }
        return exact
    }

    private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: ConvexDecoderImpl
        let fields: [String: ConvexValue]
        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

        func field(_ key: Key) throws -> ConvexValue {
            guard let v = fields[key.stringValue] else {
                let path = codingPath + [key]
                throw DecodingError.keyNotFound(key, .init(
                    codingPath: codingPath,
                    debugDescription: "No field \"\(key.stringValue)\" (at \(jsonPath(path)))"))
            }
            return v
        }

        func decodeNil(forKey key: Key) throws -> Bool { try field(key) == .null }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try decoder.child(try field(key), key).decodeValue(type)
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            try decoder.child(try field(key), key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try decoder.child(try field(key), key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            decoder.child(fields[ConvexCodingKey.superKey.stringValue] ?? .null, ConvexCodingKey.superKey)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            decoder.child(fields[key.stringValue] ?? .null, key)
        }
    }

    private struct UnkeyedContainer: UnkeyedDecodingContainer {
        let decoder: ConvexDecoderImpl
        let items: [ConvexValue]
        var currentIndex = 0
        var codingPath: [any CodingKey] { decoder.codingPath }
        var count: Int? { items.count }
        var isAtEnd: Bool { currentIndex >= items.count }

        mutating func next(_ type: Any.Type) throws -> ConvexDecoderImpl {
            let key = ConvexCodingKey(index: currentIndex)
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(type, .init(
                    codingPath: codingPath + [key],
                    debugDescription: "Array has only \(items.count) elements (at \(jsonPath(codingPath + [key])))"))
            }
            defer { currentIndex += 1 }
            return decoder.child(items[currentIndex], key)
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd else { _ = try next(Never.self); return false }
            if items[currentIndex] == .null {
                currentIndex += 1
                return true
            }
            return false
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decodeValue(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next(type).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next([ConvexValue].self).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder { try next(ConvexValue.self) }
    }

    private struct SingleValueContainer: SingleValueDecodingContainer {
        let decoder: ConvexDecoderImpl
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { decoder.value == .null }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
    }
}

private func mismatch(_ type: Any.Type, expected: String, _ found: ConvexValue, _ path: [any CodingKey]) -> DecodingError {
    var hint = ""
    if case .float64 = found, expected == "an int64" {
        hint = "; plain JSON numbers are float64 in Convex: send a BigInt (int64) or decode with @ConvexFloat"
    } else if case .int64 = found, expected == "a float64" {
        hint = "; decode int64 values into an integer type or @ConvexInt"
    }
    if found == .null {
        return DecodingError.valueNotFound(type, .init(
            codingPath: path, debugDescription: "Expected \(expected) but found null (at \(jsonPath(path)))"))
    }
    return DecodingError.typeMismatch(type, .init(
        codingPath: path,
        debugDescription: "Expected \(expected) but found \(found.typeName) \(describe(found))\(hint) (at \(jsonPath(path)))"))
}

/// A short rendering of a value for error messages.
private func describe(_ value: ConvexValue) -> String {
    switch value {
    case .array(let items): return "of \(items.count) elements"
    case .object(let fields): return "with \(fields.count) fields"
    case .string(let s): return s.count > 40 ? String(decoding: jsonQuoted(String(s.prefix(40)) + "…"), as: UTF8.self) : String(decoding: jsonQuoted(s), as: UTF8.self)
    case .bytes(let b): return "of \(b.count) bytes"
    default: return String(decoding: value.json(mode: .plain), as: UTF8.self)
    }
}

// MARK: - ConvexValue as Codable

/// With ``ConvexEncoder``/``ConvexDecoder`` a `ConvexValue` passes through unchanged. With other coders, such as
/// Foundation's `JSONEncoder`/`JSONDecoder`, it is written and read as Convex JSON (`{"$integer": …}` wrappers).
extension ConvexValue: Codable {
    public init(from decoder: any Decoder) throws {
        if let convex = decoder as? ConvexDecoderImpl {
            self = convex.value
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .boolean(b)
        } else if let d = try? container.decode(Double.self) {
            self = .float64(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let items = try? container.decode([ConvexValue].self) {
            self = .array(items)
        } else {
            let fields = try container.decode([String: ConvexValue].self)
            // Re-reading the object as Convex JSON decodes `$integer`/`$float`/`$bytes` and checks field names.
            do {
                self = try ConvexValue(convexJSON: ConvexValue.object(fields).convexJSON())
            } catch {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\(error.message) (at \(jsonPath(decoder.codingPath)))")
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if let convex = encoder as? ConvexEncoderImpl {
            convex.set(self)
            return
        }
        switch self {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .boolean(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case .float64(let d) where !d.needsFloatWrapper:
            var c = encoder.singleValueContainer()
            try c.encode(d)
        case .float64(let d):
            var c = encoder.container(keyedBy: WrapperKey.self)
            try c.encode(Base64.encode(d.littleEndianBytes), forKey: .float)
        case .int64(let v):
            var c = encoder.container(keyedBy: WrapperKey.self)
            try c.encode(Base64.encode(v.littleEndianBytes), forKey: .integer)
        case .bytes(let data):
            var c = encoder.container(keyedBy: WrapperKey.self)
            try c.encode(Base64.encode(data), forKey: .bytes)
        case .array(let items):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(item) }
        case .object(let fields):
            var c = encoder.container(keyedBy: ConvexCodingKey.self)
            for (key, field) in fields { try c.encode(field, forKey: ConvexCodingKey(key)) }
        }
    }
}

/// The keys of Convex JSON's one-key wrapper objects.
enum WrapperKey: String, CodingKey {
    case integer = "$integer"
    case float = "$float"
    case bytes = "$bytes"
}
