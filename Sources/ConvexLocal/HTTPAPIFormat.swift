import ConvexSyncProtocol
import ConvexValues
import Foundation

/// The value formats of the HTTP API (reference §2).
public enum HTTPAPIFormat: String, Sendable, Hashable {
    /// Lossless Convex JSON (`convex_encoded_json`, legacy alias `convex_json`).
    case convexEncodedJSON = "convex_encoded_json"
    /// Clean, lossy JSON (`json`, legacy alias `convex_clean_json`): int64 as decimal strings, bytes as base64,
    /// NaN/±Infinity as strings.
    case json = "json"
    /// `export_json`: int64 as bare integers, floats always with a dot or exponent, special floats and bytes wrapped.
    case exportJSON = "export_json"

    /// Parses a `format` parameter, accepting the legacy aliases.
    public init?(parameter: String) {
        switch parameter {
        case "convex_encoded_json", "convex_json": self = .convexEncodedJSON
        case "json", "convex_clean_json": self = .json
        case "export_json": self = .exportJSON
        default: return nil
        }
    }

    /// The default when a request names no format, from its `Convex-Client` header (reference §2.3): Convex JSON
    /// only for npm ≤ 1.4.1 and python ≤ 0.5.0, clean JSON for everyone else.
    public static func defaultFormat(convexClient: String?) -> HTTPAPIFormat {
        guard let header = convexClient else { return .json }
        let parts = header.split(separator: "-")
        guard parts.count >= 2, let version = parts.last.flatMap({ SemanticVersion(String($0)) }) else { return .json }
        let client = parts.dropLast().joined(separator: "-")
        switch client {
        case "npm": return version <= SemanticVersion(1, 4, 1) ? .convexEncodedJSON : .json
        case "python", "python-convex": return version <= SemanticVersion(0, 5, 0) ? .convexEncodedJSON : .json
        default: return .json
        }
    }

    /// Renders a value in this format.
    public func render(_ value: ConvexValue) -> [UInt8] {
        switch self {
        case .convexEncodedJSON: return value.convexJSON()
        case .json: return value.json(mode: .clean)
        case .exportJSON:
            var out: [UInt8] = []
            writeExportJSON(value, into: &out)
            return out
        }
    }
}

/// `export_json`: plain JSON where it is exact, Convex JSON wrappers where it would not be.
private func writeExportJSON(_ value: ConvexValue, into out: inout [UInt8]) {
    switch value {
    case .null, .boolean, .string:
        out.append(contentsOf: value.convexJSON())
    case .int64(let i):
        out.append(contentsOf: String(i).utf8)
    case .float64(let d):
        if d.isNaN || d.isInfinite {
            out.append(contentsOf: value.convexJSON())
        } else if d == 0 && d.sign == .minus {
            out.append(contentsOf: "-0.0".utf8)
        } else {
            out.append(contentsOf: value.convexJSON())
        }
    case .bytes:
        out.append(contentsOf: value.convexJSON())
    case .array(let items):
        out.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            writeExportJSON(item, into: &out)
        }
        out.append(UInt8(ascii: "]"))
    case .object(let fields):
        out.append(UInt8(ascii: "{"))
        for (i, key) in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: ConvexValue.string(key).convexJSON())
            out.append(UInt8(ascii: ":"))
            if let field = fields[key] { writeExportJSON(field, into: &out) }
        }
        out.append(UInt8(ascii: "}"))
    }
}

/// `major.minor.patch` for comparing client versions.
struct SemanticVersion: Comparable {
    var parts: [Int]

    init(_ major: Int, _ minor: Int, _ patch: Int) { parts = [major, minor, patch] }

    init?(_ text: String) {
        let core = text.split(separator: "+").first.flatMap { $0.split(separator: "-").first } ?? Substring(text)
        let numbers = core.split(separator: ".").map { Int($0) }
        guard numbers.count == 3, numbers.allSatisfy({ $0 != nil }) else { return nil }
        parts = numbers.compactMap { $0 }
    }

    static func < (a: SemanticVersion, b: SemanticVersion) -> Bool { a.parts.lexicographicallyPrecedes(b.parts) }
}
