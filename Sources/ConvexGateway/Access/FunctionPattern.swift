import Foundation

/// A glob over canonical function paths (`module:function`, with `dir/file` modules and `default` spelled out), as
/// used by the gateway's function allowlist and denylist.
///
/// - `*` matches any run of characters other than `/` and `:` (one path segment or one function name);
/// - `**` matches anything, `/` and `:` included;
/// - `?` matches one character other than `/` and `:`;
/// - every other character matches itself.
///
/// So `messages:*` is every function of `messages`, `admin/**` everything under `admin/`, `**:internal*` every
/// function whose name starts with `internal`, and `messages` (no `:`) means `messages:default`, as in URLs.
public struct FunctionPattern: Sendable, Hashable, CustomStringConvertible {
    private enum Token: Hashable {
        case literal(UInt8)
        case one
        case segment
        case any
    }

    public let description: String
    private let tokens: [Token]

    /// Parses a pattern.
    /// - Throws: ``FunctionPatternError`` when the pattern is empty or holds characters no function path can have.
    public init(_ text: String) throws(FunctionPatternError) {
        var text = text.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { throw FunctionPatternError("A function pattern is empty") }
        if !text.contains(":") && !text.hasSuffix("**") { text += ":default" }
        var tokens: [Token] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            switch byte {
            case UInt8(ascii: "*"):
                if bytes.first == UInt8(ascii: "*") {
                    bytes.removeFirst()
                    tokens.append(.any)
                } else {
                    tokens.append(.segment)
                }
            case UInt8(ascii: "?"):
                tokens.append(.one)
            default:
                guard Self.isPathByte(byte) else {
                    throw FunctionPatternError(
                        "Function pattern '\(printable(text))' may only hold letters, digits, '_', '-', '.', '/', ':', '*' and '?'"
                    )
                }
                tokens.append(.literal(byte))
            }
        }
        self.description = text
        self.tokens = tokens
    }

    /// Parses a comma-separated list of patterns (empty entries are ignored).
    public static func list(_ text: String) throws(FunctionPatternError) -> [FunctionPattern] {
        var patterns: [FunctionPattern] = []
        for item in text.split(separator: ",") where !item.trimmingCharacters(in: .whitespaces).isEmpty {
            patterns.append(try FunctionPattern(String(item)))
        }
        return patterns
    }

    /// Whether `path` (canonical `module:function`) matches.
    public func matches(_ path: String) -> Bool {
        Self.match(tokens[...], Array(path.utf8)[...])
    }

    private static func match(_ pattern: ArraySlice<Token>, _ text: ArraySlice<UInt8>) -> Bool {
        var pattern = pattern
        var text = text
        while let token = pattern.first {
            switch token {
            case .literal(let byte):
                guard text.first == byte else { return false }
                text.removeFirst()
            case .one:
                guard let byte = text.first, !isSeparator(byte) else { return false }
                text.removeFirst()
            case .segment, .any:
                let rest = pattern.dropFirst()
                var candidate = text
                while true {
                    if match(rest, candidate) { return true }
                    guard let byte = candidate.first, token == .any || !isSeparator(byte) else { return false }
                    candidate.removeFirst()
                }
            }
            pattern.removeFirst()
        }
        return text.isEmpty
    }

    private static func isSeparator(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "/") || byte == UInt8(ascii: ":") }

    private static func isPathByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x2D
            || b == 0x2E || b == 0x2F || b == 0x3A
    }
}

/// A function pattern that cannot be used; the message names it.
public struct FunctionPatternError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
