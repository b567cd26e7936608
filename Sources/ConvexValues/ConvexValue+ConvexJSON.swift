import Foundation

extension ConvexValue {
    /// Parses Convex JSON (the `convex_encoded_json` format) with the deployment's own rules:
    /// every number is a float64, `$integer`, `$float` and `$bytes` wrappers are decoded, field
    /// names are checked, retired `$set`/`$map` and Convex's size and nesting limits are enforced.
    /// - Throws: `ConvexValueError` naming the JSON path of the bad value.
    public init<Bytes: Collection>(convexJSON bytes: Bytes) throws(ConvexValueError) where Bytes.Element == UInt8 {
        let result: Result<ConvexValue, ConvexValueError>
        if let contiguous = bytes.withContiguousStorageIfAvailable({ ConvexJSONParser.parse($0) }) {
            result = contiguous
        } else {
            result = Array(bytes).withUnsafeBufferPointer { ConvexJSONParser.parse($0) }
        }
        self = try result.get()
    }

    /// Parses Convex JSON text. See ``init(convexJSON:)-(Bytes)``.
    public init(convexJSON text: String) throws(ConvexValueError) {
        var text = text
        let result = text.withUTF8 { ConvexJSONParser.parse($0) }
        self = try result.get()
    }

    /// Parses plain JSON from an HTTP client with Convex's semantics: numbers are float64, while
    /// `$integer`, `$float` and `$bytes` wrappers are honoured so a client can still send an exact int64.
    /// Plain JSON and Convex JSON read the same way; this name says which one the caller holds.
    public init<Bytes: Collection>(plainJSON bytes: Bytes) throws(ConvexValueError) where Bytes.Element == UInt8 {
        try self.init(convexJSON: bytes)
    }

    /// Parses a JSON document that carries Convex values (a sync-protocol message or an HTTP envelope), decoding
    /// wrappers and checking field names but not the per-value limits: a value sits a few levels down in its envelope,
    /// so check the values taken out of it with ``checkLimits()``.
    package init<Bytes: Collection>(envelopeJSON bytes: Bytes) throws(ConvexValueError) where Bytes.Element == UInt8 {
        let result: Result<ConvexValue, ConvexValueError>
        if let contiguous = bytes.withContiguousStorageIfAvailable({ ConvexJSONParser.parse($0, enforceLimits: false) })
        {
            result = contiguous
        } else {
            result = Array(bytes).withUnsafeBufferPointer { ConvexJSONParser.parse($0, enforceLimits: false) }
        }
        self = try result.get()
    }

    /// Checks Convex's limits on an already-built value (nesting, array length, field count, total size).
    /// - Throws: `ConvexValueError` naming the path of the first value over a limit.
    public func checkLimits() throws(ConvexValueError) {
        var path: [PathComponent] = []
        try checkLimits(depth: 0, path: &path)
        let size = convexSize
        if size > ConvexLimits.maxValueSize {
            throw ConvexValueError(
                .valueTooLarge, path: "$",
                message: "Value is too large (\(size) bytes > maximum size \(ConvexLimits.maxValueSize) bytes)")
        }
    }

    private func checkLimits(depth: Int, path: inout [PathComponent]) throws(ConvexValueError) {
        switch self {
        case .array(let items):
            if depth + 1 > ConvexLimits.maxNesting {
                throw ConvexValueError(
                    .tooNested, path: renderPath(path),
                    message:
                        "Value is too nested (nested \(depth + 1) levels deep > maximum \(ConvexLimits.maxNesting))")
            }
            if items.count > ConvexLimits.maxArrayLength {
                throw ConvexValueError(
                    .arrayTooLong, path: renderPath(path),
                    message: "Array length is too long (\(items.count) > maximum length \(ConvexLimits.maxArrayLength))"
                )
            }
            for (i, item) in items.enumerated() {
                path.append(.index(i))
                try item.checkLimits(depth: depth + 1, path: &path)
                path.removeLast()
            }
        case .object(let fields):
            if depth + 1 > ConvexLimits.maxNesting {
                throw ConvexValueError(
                    .tooNested, path: renderPath(path),
                    message:
                        "Value is too nested (nested \(depth + 1) levels deep > maximum \(ConvexLimits.maxNesting))")
            }
            if fields.count > ConvexLimits.maxObjectFields {
                throw ConvexValueError(
                    .tooManyFields, path: renderPath(path),
                    message:
                        "Object has too many fields (\(fields.count) > maximum number \(ConvexLimits.maxObjectFields))")
            }
            for (key, value) in fields {
                if let problem = fieldNameProblem(key) {
                    throw ConvexValueError(.invalidFieldName, path: renderPath(path + [.key(key)]), message: problem)
                }
                path.append(.key(key))
                try value.checkLimits(depth: depth + 1, path: &path)
                path.removeLast()
            }
        default:
            break
        }
    }

    /// Convex JSON bytes of the value: keys sorted, floats with a decimal point or exponent, special
    /// floats and int64 and bytes wrapped.
    public func convexJSON() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        ConvexJSONWriter.write(self, into: &out)
        return out
    }

    /// Convex JSON text of the value.
    public var convexJSONString: String { String(decoding: convexJSON(), as: UTF8.self) }
}

enum ConvexJSONWriter {
    static func write(_ value: ConvexValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .boolean(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int64(let v):
            out.append(contentsOf: #"{"$integer":""#.utf8)
            Base64.encode(v.littleEndianBytes, into: &out)
            out.append(contentsOf: #""}"#.utf8)
        case .float64(let d):
            if d.needsFloatWrapper {
                out.append(contentsOf: #"{"$float":""#.utf8)
                Base64.encode(d.littleEndianBytes, into: &out)
                out.append(contentsOf: #""}"#.utf8)
            } else {
                appendFloat(d, into: &out)
            }
        case .string(let s): appendQuoted(s, into: &out)
        case .bytes(let data):
            out.append(contentsOf: #"{"$bytes":""#.utf8)
            Base64.encode(data, into: &out)
            out.append(contentsOf: #""}"#.utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (i, key) in fields.keys.sorted(by: utf8Less).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendQuoted(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(fields[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}

/// Byte-wise ordering of UTF-8, the order Convex's clients sort keys in.
func utf8Less(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

/// Appends a finite float as the shortest text that reads back to the same double, always with a
/// decimal point or exponent (`1.0`, `1e-05`), as Convex's Rust side prints floats.
func appendFloat(_ d: Double, into out: inout [UInt8]) {
    out.append(contentsOf: d.description.utf8)
}

func appendQuoted(_ s: String, into out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for b in s.utf8 {
        switch b {
        case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
        case 0x0A: out.append(contentsOf: #"\n"#.utf8)
        case 0x0D: out.append(contentsOf: #"\r"#.utf8)
        case 0x09: out.append(contentsOf: #"\t"#.utf8)
        case 0x08: out.append(contentsOf: #"\b"#.utf8)
        case 0x0C: out.append(contentsOf: #"\f"#.utf8)
        case 0..<0x20:
            out.append(contentsOf: #"\u00"#.utf8)
            out.append(hexDigit(b >> 4))
            out.append(hexDigit(b & 0xF))
        default: out.append(b)
        }
    }
    out.append(UInt8(ascii: "\""))
}

@inline(__always) func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x61 + v - 10 }

func jsonQuoted(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    appendQuoted(s, into: &out)
    return out
}
