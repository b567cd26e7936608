import Foundation

/// A single-pass JSON reader that builds `ConvexValue`s directly, applying Convex JSON's rules as it goes
/// and keeping the path of the value being read so that every error can name it.
struct ConvexJSONParser {
    private let buf: UnsafeBufferPointer<UInt8>
    private var pos = 0
    private var path: [PathComponent] = []
    private var depth = 0
    /// Whether Convex's value limits (nesting, lengths, size) apply. Protocol envelopes, which carry values a few
    /// levels down, are read without them; the values inside are checked on their own.
    private let enforceLimits: Bool
    /// Convex's nesting limit, or for envelopes a generous cap that still bounds recursion on hostile input.
    private var maxDepth: Int { enforceLimits ? ConvexLimits.maxNesting : ConvexJSONParser.maxEnvelopeNesting }
    static let maxEnvelopeNesting = 256

    private init(_ buf: UnsafeBufferPointer<UInt8>, enforceLimits: Bool) {
        self.buf = buf
        self.enforceLimits = enforceLimits
    }

    static func parse(
        _ buf: UnsafeBufferPointer<UInt8>,
        enforceLimits: Bool = true
    ) -> Result<ConvexValue, ConvexValueError> {
        var parser = ConvexJSONParser(buf, enforceLimits: enforceLimits)
        do throws(ConvexValueError) {
            parser.skipWhitespace()
            let value = try parser.parseValue()
            parser.skipWhitespace()
            if parser.pos != buf.count {
                throw parser.fail(.invalidJSON, "Unexpected data after the JSON value at byte \(parser.pos)")
            }
            if enforceLimits, case let size = value.convexSize, size > ConvexLimits.maxValueSize {
                throw parser.fail(.valueTooLarge, "Value is too large (\(size) bytes > maximum size \(ConvexLimits.maxValueSize) bytes)")
            }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }

    private func fail(_ code: ConvexValueError.Code, _ message: String) -> ConvexValueError {
        ConvexValueError(code, path: renderPath(path), message: message)
    }

    private mutating func skipWhitespace() {
        while pos < buf.count {
            switch buf[pos] {
            case 0x20, 0x09, 0x0A, 0x0D: pos += 1
            default: return
            }
        }
    }

    private func describeByte() -> String {
        guard pos < buf.count else { return "end of input" }
        let b = buf[pos]
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))' at byte \(pos)" }
        return "byte 0x\(String(b, radix: 16)) at byte \(pos)"
    }

    private mutating func parseValue() throws(ConvexValueError) -> ConvexValue {
        guard pos < buf.count else { throw fail(.invalidJSON, "Unexpected end of JSON input") }
        switch buf[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .boolean(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .boolean(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .float64(try parseNumber())
        default: throw fail(.invalidJSON, "Unexpected \(describeByte()) in JSON")
        }
    }

    private mutating func expectLiteral(_ word: StaticString) throws(ConvexValueError) {
        let count = word.utf8CodeUnitCount
        guard pos + count <= buf.count else { throw fail(.invalidJSON, "Unexpected \(describeByte()) in JSON") }
        for i in 0..<count where buf[pos + i] != word.utf8Start[i] {
            throw fail(.invalidJSON, "Unexpected \(describeByte()) in JSON")
        }
        pos += count
    }

    private mutating func parseArray() throws(ConvexValueError) -> ConvexValue {
        depth += 1
        defer { depth -= 1 }
        if depth > maxDepth {
            throw fail(.tooNested, "Value is too nested (nested \(depth) levels deep > maximum \(maxDepth))")
        }
        pos += 1
        var items: [ConvexValue] = []
        skipWhitespace()
        if pos < buf.count && buf[pos] == UInt8(ascii: "]") {
            pos += 1
            return .array(items)
        }
        while true {
            if enforceLimits && items.count == ConvexLimits.maxArrayLength {
                throw fail(.arrayTooLong, "Array length is too long (more than maximum length \(ConvexLimits.maxArrayLength))")
            }
            path.append(.index(items.count))
            skipWhitespace()
            items.append(try parseValue())
            path.removeLast()
            skipWhitespace()
            guard pos < buf.count else { throw fail(.invalidJSON, "Unexpected end of JSON input in an array") }
            if buf[pos] == UInt8(ascii: ",") {
                pos += 1
            } else if buf[pos] == UInt8(ascii: "]") {
                pos += 1
                return .array(items)
            } else {
                throw fail(.invalidJSON, "Expected ',' or ']' in an array, found \(describeByte())")
            }
        }
    }

    private mutating func parseObject() throws(ConvexValueError) -> ConvexValue {
        depth += 1
        defer { depth -= 1 }
        if depth > maxDepth {
            // A one-key `$` wrapper is a scalar and may sit one level deeper than a container.
            if depth > maxDepth + 1 || !nextKeyStartsWithDollar() {
                throw fail(.tooNested, "Value is too nested (nested \(depth) levels deep > maximum \(maxDepth))")
            }
        }
        pos += 1
        var fields: [String: ConvexValue] = [:]
        var firstKey: String?
        // A first key starting with `$` may name a wrapper; it is only checked as a field name once a second
        // key shows that the object is not one.
        var firstKeyChecked = false
        skipWhitespace()
        if pos < buf.count && buf[pos] == UInt8(ascii: "}") {
            pos += 1
            return try finishObject(fields, firstKey: nil)
        }
        while true {
            skipWhitespace()
            guard pos < buf.count, buf[pos] == UInt8(ascii: "\"") else {
                throw fail(.invalidJSON, "Expected a field name in an object, found \(describeByte())")
            }
            let key = try parseString()
            if let first = firstKey {
                if !firstKeyChecked {
                    firstKeyChecked = true
                    try checkFieldName(first)
                }
                try checkFieldName(key)
                if enforceLimits && fields.count == ConvexLimits.maxObjectFields {
                    throw fail(.tooManyFields, "Object has too many fields (more than maximum number \(ConvexLimits.maxObjectFields))")
                }
            } else if key.utf8.first != UInt8(ascii: "$") {
                firstKeyChecked = true
                try checkFieldName(key)
            }
            skipWhitespace()
            guard pos < buf.count, buf[pos] == UInt8(ascii: ":") else {
                throw fail(.invalidJSON, "Expected ':' after a field name, found \(describeByte())")
            }
            pos += 1
            skipWhitespace()
            path.append(.key(key))
            let value = try parseValue()
            if fields.updateValue(value, forKey: key) != nil {
                throw fail(.duplicateField, "Duplicate field name \(String(decoding: jsonQuoted(key), as: UTF8.self)) in an object")
            }
            path.removeLast()
            if firstKey == nil { firstKey = key }
            skipWhitespace()
            guard pos < buf.count else { throw fail(.invalidJSON, "Unexpected end of JSON input in an object") }
            if buf[pos] == UInt8(ascii: ",") {
                pos += 1
            } else if buf[pos] == UInt8(ascii: "}") {
                pos += 1
                return try finishObject(fields, firstKey: firstKeyChecked ? nil : firstKey)
            } else {
                throw fail(.invalidJSON, "Expected ',' or '}' in an object, found \(describeByte())")
            }
        }
    }

    /// Whether the object starting at `pos` has a first key whose raw text starts with `$`.
    private func nextKeyStartsWithDollar() -> Bool {
        var p = pos + 1
        while p < buf.count, buf[p] == 0x20 || buf[p] == 0x09 || buf[p] == 0x0A || buf[p] == 0x0D { p += 1 }
        return p + 1 < buf.count && buf[p] == UInt8(ascii: "\"") && buf[p + 1] == UInt8(ascii: "$")
    }

    private func checkFieldName(_ key: String) throws(ConvexValueError) {
        if let problem = fieldNameProblem(key) {
            throw ConvexValueError(.invalidFieldName, path: renderPath(path + [.key(key)]), message: problem)
        }
    }

    /// Decodes `$integer`/`$float`/`$bytes` wrappers and rejects retired types. `firstKey` is the single key of
    /// an object whose only key starts with `$` (all other keys were checked while reading).
    private func finishObject(_ fields: [String: ConvexValue], firstKey: String?) throws(ConvexValueError) -> ConvexValue {
        if fields.count == 1, let key = firstKey, let inner = fields[key] {
            switch key {
            case "$integer":
                guard case .string(let text) = inner, let bytes = Base64.decode(text) else {
                    throw fail(.invalidInt64, "Invalid $integer: expected a standard base64 string")
                }
                guard let v = Int64(littleEndianBytes: bytes) else {
                    throw fail(.invalidInt64, "Int64 must be exactly eight bytes")
                }
                return .int64(v)
            case "$float":
                guard case .string(let text) = inner, let bytes = Base64.decode(text) else {
                    throw fail(.invalidFloat64, "Invalid $float: expected a standard base64 string")
                }
                guard let d = Double(littleEndianBytes: bytes) else {
                    throw fail(.invalidFloat64, "Float64 must be exactly eight bytes")
                }
                guard d.needsFloatWrapper else {
                    throw fail(.invalidFloat64, "Float64 \(d) should be encoded as a number")
                }
                return .float64(d)
            case "$bytes":
                guard case .string(let text) = inner, let bytes = Base64.decode(text) else {
                    throw fail(.invalidBytes, "Invalid $bytes: expected a standard base64 string")
                }
                return .bytes(Data(bytes))
            case "$set":
                throw fail(.retiredType, "Received a Set which is no longer supported as a Convex type, with values: \(inner)")
            case "$map":
                throw fail(.retiredType, "Received a Map which is no longer supported as a Convex type, with values: \(inner)")
            default:
                try checkFieldName(key)
            }
        }
        if depth > maxDepth {
            throw fail(.tooNested, "Value is too nested (nested \(depth) levels deep > maximum \(maxDepth))")
        }
        return .object(fields)
    }

    private mutating func parseString() throws(ConvexValueError) -> String {
        pos += 1  // opening quote
        let start = pos
        var ascii = true
        // Fast path: no escapes.
        while pos < buf.count {
            let b = buf[pos]
            if b == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: buf[start..<pos])
                pos += 1
                if ascii { return String(decoding: slice, as: UTF8.self) }
                guard let s = String(validating: slice, as: UTF8.self) else {
                    throw fail(.invalidUTF8, "String is not valid UTF-8")
                }
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw fail(.invalidJSON, "Control character in a string at byte \(pos)") }
            if b >= 0x80 { ascii = false }
            pos += 1
        }
        guard pos < buf.count else { throw fail(.invalidJSON, "Unterminated string") }
        // Slow path with escapes.
        var bytes = Array(buf[start..<pos])
        while pos < buf.count {
            let b = buf[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                guard let s = String(validating: bytes, as: UTF8.self) else {
                    throw fail(.invalidUTF8, "String is not valid UTF-8")
                }
                return s
            }
            if b < 0x20 { throw fail(.invalidJSON, "Control character in a string at byte \(pos)") }
            if b != UInt8(ascii: "\\") {
                bytes.append(b)
                pos += 1
                continue
            }
            pos += 1
            guard pos < buf.count else { break }
            let e = buf[pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): bytes.append(0x22)
            case UInt8(ascii: "\\"): bytes.append(0x5C)
            case UInt8(ascii: "/"): bytes.append(0x2F)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard pos + 1 < buf.count, buf[pos] == UInt8(ascii: "\\"), buf[pos + 1] == UInt8(ascii: "u") else {
                        throw fail(.invalidUTF8, "Unpaired surrogate in a string escape")
                    }
                    pos += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else {
                        throw fail(.invalidUTF8, "Unpaired surrogate in a string escape")
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail(.invalidUTF8, "Unpaired surrogate in a string escape")
                }
                bytes.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default:
                throw fail(.invalidJSON, "Invalid escape '\\\(Character(Unicode.Scalar(e)))' in a string")
            }
        }
        throw fail(.invalidJSON, "Unterminated string")
    }

    private mutating func parseHex4() throws(ConvexValueError) -> UInt32 {
        guard pos + 4 <= buf.count else { throw fail(.invalidJSON, "Truncated \\u escape in a string") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = buf[pos]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - 0x41 + 10)
            default: throw fail(.invalidJSON, "Invalid \\u escape in a string")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    private mutating func parseNumber() throws(ConvexValueError) -> Double {
        let start = pos
        var negative = false
        if buf[pos] == UInt8(ascii: "-") {
            negative = true
            pos += 1
        }
        guard pos < buf.count, isDigit(buf[pos]) else { throw fail(.invalidJSON, "Invalid number at byte \(start)") }
        var mantissa: UInt64 = 0
        var digits = 0
        if buf[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < buf.count && isDigit(buf[pos]) { throw fail(.invalidJSON, "Invalid number (leading zero) at byte \(start)") }
        } else {
            while pos < buf.count && isDigit(buf[pos]) {
                if digits < 19 { mantissa = mantissa &* 10 &+ UInt64(buf[pos] - 0x30) }
                digits += 1
                pos += 1
            }
        }
        var simple = true
        if pos < buf.count && buf[pos] == UInt8(ascii: ".") {
            simple = false
            pos += 1
            guard pos < buf.count, isDigit(buf[pos]) else { throw fail(.invalidJSON, "Invalid number at byte \(start)") }
            while pos < buf.count && isDigit(buf[pos]) { pos += 1 }
        }
        if pos < buf.count && (buf[pos] == UInt8(ascii: "e") || buf[pos] == UInt8(ascii: "E")) {
            simple = false
            pos += 1
            if pos < buf.count && (buf[pos] == UInt8(ascii: "+") || buf[pos] == UInt8(ascii: "-")) { pos += 1 }
            guard pos < buf.count, isDigit(buf[pos]) else { throw fail(.invalidJSON, "Invalid number at byte \(start)") }
            while pos < buf.count && isDigit(buf[pos]) { pos += 1 }
        }
        if simple && digits <= 15 {
            // Exactly representable: at most 15 decimal digits fit in a double's 53-bit mantissa.
            let d = Double(mantissa)
            return negative ? -d : d
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: buf[start..<pos]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            throw fail(.invalidJSON, "Number \(text) is out of range for a float64")
        }
        return d
    }
}
