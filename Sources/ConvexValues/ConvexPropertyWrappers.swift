import Foundation

/// Integer types that hold a Convex int64: `Int`, `Int32`, `Int64`.
public protocol ConvexIntegerValue: FixedWidthInteger, Codable, Sendable {}
extension Int: ConvexIntegerValue {}
extension Int32: ConvexIntegerValue {}
extension Int64: ConvexIntegerValue {}

/// Floating-point types that hold a Convex float64: `Double`, `Float`.
public protocol ConvexFloatValue: BinaryFloatingPoint, Codable, Sendable {}
extension Double: ConvexFloatValue {}
extension Float: ConvexFloatValue {}

/// A property holding a Convex int64 (a JavaScript `bigint`, `v.int64()`).
///
/// Decodes `{"$integer": "<base64>"}` with ``ConvexDecoder`` and with Foundation's `JSONDecoder` reading Convex JSON,
/// and encodes back to int64 (with `JSONEncoder`, to the `$integer` wrapper). A plain JSON number is a float64 and is
/// rejected, as is a value out of the property type's range; both throw `DecodingError` naming the key path.
@propertyWrapper
public struct ConvexInt<Value: ConvexIntegerValue>: Codable, Sendable, Hashable {
    public var wrappedValue: Value

    public init(wrappedValue: Value) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decodeConvexInteger(Value.self, from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try encodeConvexInteger(wrappedValue, to: encoder)
    }
}

/// An optional Convex int64; a missing field or `null` decodes as `nil`, and `nil` is left out when encoding.
@propertyWrapper
public struct OptionalConvexInt<Value: ConvexIntegerValue>: Codable, Sendable, Hashable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try decodeConvexInteger(Value.self, from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        if let wrappedValue {
            try encodeConvexInteger(wrappedValue, to: encoder)
        } else {
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }
}

/// A property holding a Convex float64 (a JavaScript `number`).
///
/// Decodes a plain JSON number or `{"$float": "<base64>"}` (NaN, ±Infinity, −0.0), with ``ConvexDecoder`` and with
/// Foundation's `JSONDecoder` reading Convex JSON, and encodes back to float64 (with `JSONEncoder`, special values
/// as the `$float` wrapper). An int64 is rejected with a `DecodingError` naming the key path.
@propertyWrapper
public struct ConvexFloat<Value: ConvexFloatValue>: Codable, Sendable, Hashable {
    public var wrappedValue: Value

    public init(wrappedValue: Value) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decodeConvexFloat(Value.self, from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try encodeConvexFloat(wrappedValue, to: encoder)
    }
}

/// An optional Convex float64; a missing field or `null` decodes as `nil`, and `nil` is left out when encoding.
@propertyWrapper
public struct OptionalConvexFloat<Value: ConvexFloatValue>: Codable, Sendable, Hashable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try decodeConvexFloat(Value.self, from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        if let wrappedValue {
            try encodeConvexFloat(wrappedValue, to: encoder)
        } else {
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }
}

// A missing key decodes the optional wrappers as nil, and nil is omitted (Convex's `v.optional` accepts a missing
// field but not null).
extension KeyedDecodingContainer {
    public func decode<V>(_ type: OptionalConvexInt<V>.Type, forKey key: Key) throws -> OptionalConvexInt<V> {
        try decodeIfPresent(type, forKey: key) ?? OptionalConvexInt(wrappedValue: nil)
    }

    public func decode<V>(_ type: OptionalConvexFloat<V>.Type, forKey key: Key) throws -> OptionalConvexFloat<V> {
        try decodeIfPresent(type, forKey: key) ?? OptionalConvexFloat(wrappedValue: nil)
    }
}

extension KeyedEncodingContainer {
    public mutating func encode<V>(_ value: OptionalConvexInt<V>, forKey key: Key) throws {
        if let v = value.wrappedValue { try encode(ConvexInt(wrappedValue: v), forKey: key) }
    }

    public mutating func encode<V>(_ value: OptionalConvexFloat<V>, forKey key: Key) throws {
        if let v = value.wrappedValue { try encode(ConvexFloat(wrappedValue: v), forKey: key) }
    }
}

// MARK: - Shared coding

private func decodeConvexInteger<T: ConvexIntegerValue>(_ type: T.Type, from decoder: any Decoder) throws -> T {
    if let convex = decoder as? ConvexDecoderImpl {
        return try convex.integer(T.self)
    }
    // Another decoder reading Convex JSON text: {"$integer": "<base64 of 8 bytes LE>"}.
    let container: KeyedDecodingContainer<WrapperKey>
    do {
        container = try decoder.container(keyedBy: WrapperKey.self)
    } catch {
        throw DecodingError.typeMismatch(T.self, .init(
            codingPath: decoder.codingPath,
            debugDescription: "Expected an int64 ({\"$integer\": …}); a plain JSON number is a float64 in Convex "
                + "(at \(jsonPath(decoder.codingPath)))",
            underlyingError: error))
    }
    let text = try container.decode(String.self, forKey: .integer)
    guard let bytes = Base64.decode(text), let v = Int64(littleEndianBytes: bytes) else {
        throw DecodingError.dataCorruptedError(
            forKey: .integer, in: container,
            debugDescription: "Invalid $integer \"\(text)\": expected standard base64 of eight bytes "
                + "(at \(jsonPath(decoder.codingPath)))")
    }
    guard let exact = T(exactly: v) else {
        throw DecodingError.dataCorrupted(.init(
            codingPath: decoder.codingPath,
            debugDescription: "Int64 \(v) is out of range for \(T.self) (at \(jsonPath(decoder.codingPath)))"))
    }
    return exact
}

private func encodeConvexInteger<T: ConvexIntegerValue>(_ value: T, to encoder: any Encoder) throws {
    if encoder is ConvexEncoderImpl {
        var container = encoder.singleValueContainer()
        try container.encode(Int64(value))
    } else {
        var container = encoder.container(keyedBy: WrapperKey.self)
        try container.encode(Base64.encode(Int64(value).littleEndianBytes), forKey: .integer)
    }
}

private func decodeConvexFloat<T: ConvexFloatValue>(_ type: T.Type, from decoder: any Decoder) throws -> T {
    if let convex = decoder as? ConvexDecoderImpl {
        return try convex.decodeValue(T.self)
    }
    // Another decoder reading Convex JSON text: a number, or {"$float": "<base64 of 8 bytes LE>"}.
    if let container = try? decoder.singleValueContainer(), let v = try? container.decode(Double.self) {
        return try narrowed(v, T.self, decoder.codingPath)
    }
    let container: KeyedDecodingContainer<WrapperKey>
    do {
        container = try decoder.container(keyedBy: WrapperKey.self)
    } catch {
        throw DecodingError.typeMismatch(T.self, .init(
            codingPath: decoder.codingPath,
            debugDescription: "Expected a float64 (a number or {\"$float\": …}) (at \(jsonPath(decoder.codingPath)))",
            underlyingError: error))
    }
    let text = try container.decode(String.self, forKey: .float)
    guard let bytes = Base64.decode(text), let d = Double(littleEndianBytes: bytes) else {
        throw DecodingError.dataCorruptedError(
            forKey: .float, in: container,
            debugDescription: "Invalid $float \"\(text)\": expected standard base64 of eight bytes "
                + "(at \(jsonPath(decoder.codingPath)))")
    }
    return try narrowed(d, T.self, decoder.codingPath)
}

private func narrowed<T: ConvexFloatValue>(_ d: Double, _ type: T.Type, _ path: [any CodingKey]) throws -> T {
    let v = T(d)
    if d.isFinite && !v.isFinite {
        throw DecodingError.dataCorrupted(.init(
            codingPath: path, debugDescription: "Float64 \(d) does not fit in \(T.self) (at \(jsonPath(path)))"))
    }
    return v
}

private func encodeConvexFloat<T: ConvexFloatValue>(_ value: T, to encoder: any Encoder) throws {
    let d = Double(value)
    if encoder is ConvexEncoderImpl || !d.needsFloatWrapper {
        var container = encoder.singleValueContainer()
        try container.encode(d)
    } else {
        var container = encoder.container(keyedBy: WrapperKey.self)
        try container.encode(Base64.encode(d.littleEndianBytes), forKey: .float)
    }
}
