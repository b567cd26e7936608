/// A Convex function path taken from a gateway URL: `messages:list`, `dir/file:fn`, or `messages` (the default export).
///
/// The module part is one or more `/`-separated segments of letters, digits, `_`, `-` and `.` (an optional `.js`
/// suffix is accepted, as Convex accepts it); the function part is a Convex identifier. Anything else, such as
/// `..`, empty segments or control characters, is rejected before a request reaches the deployment.
public struct FunctionPath: Hashable, Sendable, CustomStringConvertible {
    public let module: String
    public let function: String

    /// The path as sent to Convex: `module:function`, with `default` spelled out.
    public var description: String { "\(module):\(function)" }

    public init(parsing text: String) throws(GatewayError) {
        guard !text.isEmpty else {
            throw .badRequest("Function path is empty; expected module:function, e.g. messages:list", code: .invalidFunctionPath)
        }
        guard text.utf8.count <= 1024 else {
            throw .badRequest("Function path is longer than 1024 bytes", code: .invalidFunctionPath)
        }
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count <= 2 else {
            throw Self.invalid(text, "it has more than one ':'")
        }
        var module = String(parts[0])
        let function = parts.count == 2 ? String(parts[1]) : "default"
        guard !module.isEmpty else { throw Self.invalid(text, "the module name is empty") }
        for segment in module.split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty else { throw Self.invalid(text, "it has an empty path segment") }
            guard segment != ".", segment != ".." else { throw Self.invalid(text, "'.' and '..' segments are not allowed") }
            guard segment.utf8.allSatisfy(Self.isModuleByte) else {
                throw Self.invalid(text, "module names may only contain letters, digits, '_', '-', '.' and '/'")
            }
        }
        if module.hasSuffix(".js") {
            module.removeLast(3)
            guard !module.isEmpty, !module.hasSuffix("/") else { throw Self.invalid(text, "the module name is empty") }
        }
        // As in Convex, a module file may have no extension other than `.js` (`a.b:f` names no module).
        if let file = module.split(separator: "/").last, file.contains(".") {
            throw Self.invalid(text, "a module file name may not have an extension other than '.js'")
        }
        guard Self.isIdentifier(function) else {
            throw Self.invalid(text, "'\(function)' is not a valid function name (letters, digits and '_', not starting with a digit, at most 64)")
        }
        self.module = module
        self.function = function
    }

    private static func invalid(_ text: String, _ why: String) -> GatewayError {
        .badRequest("Invalid function path '\(printable(text))': \(why)", code: .invalidFunctionPath)
    }

    private static func isModuleByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x2D || b == 0x2E
    }

    static func isIdentifier(_ s: String) -> Bool {
        let utf8 = s.utf8
        guard let first = utf8.first, utf8.count <= 64, !(first >= 0x30 && first <= 0x39) else { return false }
        guard !utf8.allSatisfy({ $0 == 0x5F }) else { return false }
        return utf8.allSatisfy { isModuleByte($0) && $0 != 0x2D && $0 != 0x2E }
    }
}

/// Text safe to echo in an error message: control characters and non-ASCII become `\u{…}` escapes, long text is cut.
func printable(_ text: String, limit: Int = 200) -> String {
    var out = ""
    for scalar in text.unicodeScalars.prefix(limit) {
        if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value > 0x7E {
            out += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    if text.unicodeScalars.count > limit { out += "…" }
    return out
}
