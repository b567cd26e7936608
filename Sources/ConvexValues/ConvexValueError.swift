/// Why a value is not a valid Convex value, and where: `path` is a JSON path such as `$.teams[3].wins`.
public struct ConvexValueError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of problem; stable for programs, while `message` is for people.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidJSON = Code(rawValue: "InvalidJSON")
        public static let invalidUTF8 = Code(rawValue: "InvalidUTF8")
        public static let invalidFieldName = Code(rawValue: "InvalidFieldName")
        public static let duplicateField = Code(rawValue: "DuplicateField")
        public static let invalidInt64 = Code(rawValue: "InvalidInt64")
        public static let invalidFloat64 = Code(rawValue: "InvalidFloat64")
        public static let invalidBytes = Code(rawValue: "InvalidBytes")
        public static let retiredType = Code(rawValue: "RetiredType")
        public static let tooNested = Code(rawValue: "TooNestedError")
        public static let arrayTooLong = Code(rawValue: "ArrayTooLong")
        public static let tooManyFields = Code(rawValue: "TooManyFields")
        public static let valueTooLarge = Code(rawValue: "ValueTooLargeError")
    }

    public let code: Code
    /// JSON path of the offending value, `$` for the root.
    public let path: String
    /// Human-readable explanation, without the path.
    public let message: String

    public init(_ code: Code, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    public var description: String { "\(message) (at \(path))" }
}

/// The limits Convex places on values (`crates/value/src/{size,array,object}.rs`, `identifier.rs`).
public enum ConvexLimits {
    public static let maxNesting = 64
    public static let maxArrayLength = 8192
    public static let maxObjectFields = 1024
    public static let maxFieldNameLength = 1024
    public static let maxValueSize = 1 << 25
}

/// One step of a JSON path.
enum PathComponent {
    case key(String)
    case index(Int)
}

func renderPath<C: Collection>(_ components: C) -> String where C.Element == PathComponent {
    var out = "$"
    for component in components {
        switch component {
        case .index(let i): out += "[\(i)]"
        case .key(let k):
            if !k.isEmpty, k.utf8.allSatisfy({ isIdentifierByte($0) }), let first = k.utf8.first, !isDigit(first) {
                out += "." + k
            } else {
                out += "[" + String(decoding: jsonQuoted(k), as: UTF8.self) + "]"
            }
        }
    }
    return out
}

@inline(__always) func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
@inline(__always) func isIdentifierByte(_ b: UInt8) -> Bool {
    (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || isDigit(b) || b == 0x5F
}

/// Checks Convex's field-name rule; returns a message when the name is invalid.
func fieldNameProblem(_ name: String) -> String? {
    let utf8 = name.utf8
    if utf8.first == UInt8(ascii: "$") {
        return "Field name \(String(decoding: jsonQuoted(name), as: UTF8.self)) starts with a '$', which is reserved"
    }
    if utf8.count > ConvexLimits.maxFieldNameLength {
        return "Field name is \(utf8.count) bytes long; the limit is \(ConvexLimits.maxFieldNameLength)"
    }
    for b in utf8 where b < 0x20 || b > 0x7E {
        return
            "Field name \(String(decoding: jsonQuoted(name), as: UTF8.self)) has invalid character(s): field names may only contain non-control ASCII characters"
    }
    return nil
}
