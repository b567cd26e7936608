import Foundation

/// How a Convex value is rendered as JSON for a client.
///
/// | Convex type | `plain` (default) | `clean` | `encoded` |
/// | --- | --- | --- | --- |
/// | int64 | JSON integer, exact digits: `80` | decimal string: `"80"` | `{"$integer":"UAAAAAAAAAA="}` |
/// | float64 | shortest round-trip number: `1.5`, `3.0`, `1e-05` | as `plain` | as `plain` |
/// | NaN, ±Infinity | `"NaN"`, `"Infinity"`, `"-Infinity"` | as `plain` | `{"$float":…}` |
/// | −0.0 | `-0.0` | `-0.0` | `{"$float":"AAAAAAAAAIA="}` |
/// | bytes | standard padded base64 string | as `plain` | `{"$bytes":…}` |
///
/// `clean` is exactly Convex's own `format=json`; `encoded` is Convex JSON (`convex_encoded_json`).
/// Only `encoded` reads back to the same value; `plain` keeps int64 exact for clients that parse big integers.
public enum OutputFormat: String, Sendable, Hashable, CaseIterable {
    case plain
    case clean
    case encoded
}

extension ConvexValue {
    /// JSON bytes of the value in the given mode. Object keys are sorted bytewise.
    public func json(mode: OutputFormat = .plain) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        appendJSON(mode: mode, to: &out)
        return out
    }

    /// JSON text of the value in the given mode.
    public func jsonString(mode: OutputFormat = .plain) -> String {
        String(decoding: json(mode: mode), as: UTF8.self)
    }

    /// Appends the JSON of the value in the given mode to `out`.
    public func appendJSON(mode: OutputFormat, to out: inout [UInt8]) {
        switch mode {
        case .encoded: ConvexJSONWriter.write(self, into: &out)
        case .plain: PlainJSONWriter.write(self, quotedIntegers: false, into: &out)
        case .clean: PlainJSONWriter.write(self, quotedIntegers: true, into: &out)
        }
    }
}

enum PlainJSONWriter {
    static func write(_ value: ConvexValue, quotedIntegers: Bool, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .boolean(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int64(let v):
            if quotedIntegers { out.append(UInt8(ascii: "\"")) }
            out.append(contentsOf: String(v).utf8)
            if quotedIntegers { out.append(UInt8(ascii: "\"")) }
        case .float64(let d):
            if d.isNaN {
                out.append(contentsOf: #""NaN""#.utf8)
            } else if d == .infinity {
                out.append(contentsOf: #""Infinity""#.utf8)
            } else if d == -.infinity {
                out.append(contentsOf: #""-Infinity""#.utf8)
            } else {
                appendFloat(d, into: &out)
            }
        case .string(let s): appendQuoted(s, into: &out)
        case .bytes(let data):
            out.append(UInt8(ascii: "\""))
            Base64.encode(data, into: &out)
            out.append(UInt8(ascii: "\""))
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, quotedIntegers: quotedIntegers, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (i, (key, field)) in fields.sorted(by: { utf8Less($0.key, $1.key) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendQuoted(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(field, quotedIntegers: quotedIntegers, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
