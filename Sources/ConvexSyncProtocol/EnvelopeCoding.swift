import ConvexValues

/// Field access on a decoded envelope object with precise errors, shared by both message directions.
struct EnvelopeReader {
    let fields: [String: ConvexValue]
    let prefix: String

    init(_ value: ConvexValue, prefix: String = "") throws(SyncProtocolError) {
        guard case .object(let fields) = value else {
            throw SyncProtocolError(
                .notAnObject, field: prefix.isEmpty ? nil : prefix,
                message: prefix.isEmpty ? "message is not a JSON object" : "`\(prefix)` is not a JSON object")
        }
        self.fields = fields
        self.prefix = prefix
    }

    /// Parses a message. The bytes are scanned through a buffer pointer: a caller in another module reaches this
    /// through an unspecialized generic, where walking `some Collection` byte by byte is slow.
    static func parse(_ bytes: some Collection<UInt8>) throws(SyncProtocolError) -> EnvelopeReader {
        let value =
            bytes.withContiguousStorageIfAvailable(parseValue)
            ?? Array(bytes).withUnsafeBufferPointer(parseValue)
        return try EnvelopeReader(value.get())
    }

    private static func parseValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<ConvexValue, SyncProtocolError> {
        if let depth = excessiveNesting(bytes) {
            return .failure(
                SyncProtocolError(
                    .invalidValue, message: "invalid JSON: Value is too nested (more than \(depth) levels)"))
        }
        do {
            return .success(try ConvexValue(envelopeJSON: bytes))
        } catch {
            return .failure(SyncProtocolError(.invalidJSON, message: "invalid JSON: \(error.description)"))
        }
    }

    func name(_ key: String) -> String { prefix.isEmpty ? key : "\(prefix).\(key)" }

    func has(_ key: String) -> Bool { fields[key] != nil }

    /// Present and not null.
    func hasValue(_ key: String) -> Bool {
        if let v = fields[key], v != .null { return true }
        return false
    }

    func value(_ key: String) throws(SyncProtocolError) -> ConvexValue {
        guard let v = fields[key] else { throw .missing(name(key)) }
        return v
    }

    /// A value that will be handed to a function or a caller: its limits are checked.
    func checkedValue(_ key: String) throws(SyncProtocolError) -> ConvexValue {
        let v = try value(key)
        try Self.check(v, field: name(key))
        return v
    }

    static func check(_ v: ConvexValue, field: String) throws(SyncProtocolError) {
        do {
            try v.checkLimits()
        } catch {
            throw SyncProtocolError(
                .invalidValue, field: field, message: "invalid value in `\(field)`: \(error.description)")
        }
    }

    func string(_ key: String) throws(SyncProtocolError) -> String {
        guard case .string(let s) = try value(key) else { throw .invalid(name(key), "a string") }
        return s
    }

    func optionalString(_ key: String) throws(SyncProtocolError) -> String? {
        guard let v = fields[key], v != .null else { return nil }
        guard case .string(let s) = v else { throw .invalid(name(key), "a string or null") }
        return s
    }

    func bool(_ key: String) throws(SyncProtocolError) -> Bool {
        guard case .boolean(let b) = try value(key) else { throw .invalid(name(key), "a boolean") }
        return b
    }

    func optionalBool(_ key: String) throws(SyncProtocolError) -> Bool? {
        guard let v = fields[key], v != .null else { return nil }
        guard case .boolean(let b) = v else { throw .invalid(name(key), "a boolean or null") }
        return b
    }

    func u32(_ key: String) throws(SyncProtocolError) -> UInt32 {
        let v = try value(key)
        guard let n = Self.u32(v) else { throw .invalid(name(key), "an integer between 0 and 4294967295") }
        return n
    }

    func optionalU32(_ key: String) throws(SyncProtocolError) -> UInt32? {
        guard let v = fields[key], v != .null else { return nil }
        guard let n = Self.u32(v) else { throw .invalid(name(key), "an integer between 0 and 4294967295 or null") }
        return n
    }

    static func u32(_ v: ConvexValue) -> UInt32? {
        switch v {
        case .float64(let d):
            guard d.isFinite, d >= 0, d <= Double(UInt32.max), d.rounded() == d else { return nil }
            return UInt32(d)
        case .int64(let i):
            return UInt32(exactly: i)
        default:
            return nil
        }
    }

    func optionalNumber(_ key: String) throws(SyncProtocolError) -> Double? {
        guard let v = fields[key], v != .null else { return nil }
        switch v {
        case .float64(let d): return d
        case .int64(let i): return Double(i)
        default: throw .invalid(name(key), "a number or null")
        }
    }

    func timestamp(_ key: String) throws(SyncProtocolError) -> ConvexTimestamp {
        guard case .string(let s) = try value(key), let ts = ConvexTimestamp(base64: s) else {
            throw .invalid(name(key), "a timestamp (base64 of 8 little-endian bytes)")
        }
        return ts
    }

    func optionalTimestamp(_ key: String) throws(SyncProtocolError) -> ConvexTimestamp? {
        guard hasValue(key) else { return nil }
        return try timestamp(key)
    }

    func array(_ key: String) throws(SyncProtocolError) -> [ConvexValue] {
        guard case .array(let items) = try value(key) else { throw .invalid(name(key), "an array") }
        return items
    }

    func stringArray(_ key: String) throws(SyncProtocolError) -> [String] {
        var out: [String] = []
        for (i, item) in try array(key).enumerated() {
            guard case .string(let s) = item else { throw .invalid("\(name(key))[\(i)]", "a string") }
            out.append(s)
        }
        return out
    }

    func object(_ key: String) throws(SyncProtocolError) -> EnvelopeReader {
        try EnvelopeReader(try value(key), prefix: name(key))
    }

    /// Function arguments: an array holding exactly one Convex-JSON object.
    func args(_ key: String) throws(SyncProtocolError) -> [String: ConvexValue] {
        let items = try array(key)
        guard items.count == 1, case .object(let fields) = items[0] else {
            throw .invalid(name(key), "an array holding one object of named arguments")
        }
        try Self.check(items[0], field: name(key))
        return fields
    }
}

/// Builds one JSON object as text: keys in the order written, Convex values in Convex JSON.
struct EnvelopeWriter {
    private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var first = true

    private mutating func key(_ k: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(contentsOf: ConvexValue.string(k).convexJSON())
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func string(_ k: String, _ v: String) {
        key(k)
        bytes.append(contentsOf: ConvexValue.string(v).convexJSON())
    }

    mutating func optionalString(_ k: String, _ v: String?) {
        if let v { string(k, v) } else { raw(k, "null") }
    }

    mutating func value(_ k: String, _ v: ConvexValue) {
        key(k)
        bytes.append(contentsOf: v.convexJSON())
    }

    mutating func u32(_ k: String, _ v: UInt32) { raw(k, String(v)) }

    /// A plain JSON number: integral values without a decimal point (serde reads them as integers or floats).
    mutating func number(_ k: String, _ v: Double) {
        if v.isFinite, v.rounded() == v, abs(v) < 9.0e15 {
            raw(k, String(Int64(v)))
        } else if v.isFinite {
            raw(k, v.description)
        } else {
            raw(k, "null")
        }
    }

    mutating func bool(_ k: String, _ v: Bool) { raw(k, v ? "true" : "false") }

    mutating func raw(_ k: String, _ text: String) {
        key(k)
        bytes.append(contentsOf: text.utf8)
    }

    mutating func rawBytes(_ k: String, _ json: [UInt8]) {
        key(k)
        bytes.append(contentsOf: json)
    }

    mutating func stringArray(_ k: String, _ items: [String]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (i, s) in items.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: ConvexValue.string(s).convexJSON())
        }
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func array(_ k: String, _ elements: [[UInt8]]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (i, e) in elements.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: e)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func args(_ k: String, _ args: [String: ConvexValue]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        bytes.append(contentsOf: ConvexValue.object(args).convexJSON())
        bytes.append(UInt8(ascii: "]"))
    }

    func finish() -> [UInt8] { bytes + [UInt8(ascii: "}")] }
}

extension StateVersion {
    var json: [UInt8] {
        var w = EnvelopeWriter()
        w.u32("querySet", querySet)
        w.u32("identity", identity)
        w.string("ts", ts.base64)
        return w.finish()
    }

    init(reading r: EnvelopeReader) throws(SyncProtocolError) {
        self.init(querySet: try r.u32("querySet"), identity: try r.u32("identity"), ts: try r.timestamp("ts"))
    }
}

/// The nesting bound of a sync message or HTTP envelope: Convex's value limit plus room for the envelope.
package let maxEnvelopeNesting = ConvexLimits.maxNesting + 16

/// Scans JSON text for bracket nesting deeper than `limit` (outside strings) before a recursive parse sees it;
/// returns the limit when exceeded.
package func excessiveNesting(_ bytes: some Collection<UInt8>, limit: Int = maxEnvelopeNesting) -> Int? {
    var depth = 0
    var inString = false
    var escaped = false
    for b in bytes {
        if inString {
            if escaped {
                escaped = false
            } else if b == UInt8(ascii: "\\") {
                escaped = true
            } else if b == UInt8(ascii: "\"") {
                inString = false
            }
            continue
        }
        switch b {
        case UInt8(ascii: "\""): inString = true
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            depth += 1
            if depth > limit { return limit }
        case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
        default: break
        }
    }
    return nil
}
