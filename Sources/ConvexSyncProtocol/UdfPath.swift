/// A Convex function path, the one parser for the whole package: `messages:list`, `dir/file:fn`, or `messages` (the
/// default export). `m:f` ≡ `m.js:f`, and `m` ≡ `m:default` (reference §4.2, `udf_path.rs`).
///
/// The module part is one or more `/`-separated segments of letters, digits, `_`, `-` and `.`; an optional `.js`
/// suffix is dropped, and a module file may have no other extension. The function part is a Convex identifier.
/// Anything else, such as `..`, empty segments, a second `:` or control characters, is refused, so a path that
/// parses is safe to echo, log and send upstream.
public struct UdfPath: Sendable, Hashable, CustomStringConvertible {
    /// Module path without the `.js` extension, e.g. `messages` or `dir/messages`.
    public let module: String
    /// Exported function name; `default` when the path had none.
    public let function: String

    /// Longest path accepted, in UTF-8 bytes.
    public static let maxLength = 1024

    /// Parses `module[:function]`.
    /// - Throws: ``UdfPathError`` naming what is wrong.
    public init(parsing text: String) throws(UdfPathError) {
        guard !text.isEmpty else {
            throw UdfPathError(path: text, message: "the path is empty; expected module:function, e.g. messages:list")
        }
        guard text.utf8.count <= Self.maxLength else {
            throw UdfPathError(path: text, message: "it is longer than \(Self.maxLength) bytes")
        }
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw UdfPathError(path: text, message: "it has more than one ':'") }
        var module = parts[0]
        let function = parts.count == 2 ? parts[1] : "default"
        guard !module.isEmpty else { throw UdfPathError(path: text, message: "the module path is empty") }
        guard !function.isEmpty else { throw UdfPathError(path: text, message: "the function name is empty") }
        for segment in module.split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty else {
                throw UdfPathError(path: text, message: "the module path has an empty path component")
            }
            guard segment != ".", segment != ".." else {
                throw UdfPathError(path: text, message: "'.' and '..' path components are not allowed")
            }
            guard segment.utf8.allSatisfy(Self.isModuleByte) else {
                throw UdfPathError(
                    path: text, message: "module paths may only contain letters, digits, '_', '-', '.' and '/'")
            }
        }
        if module.hasSuffix(".js") {
            module = module.dropLast(3)
            guard !module.isEmpty, !module.hasSuffix("/") else {
                throw UdfPathError(path: text, message: "the module path is empty")
            }
        }
        if let file = module.split(separator: "/").last, let dot = file.lastIndex(of: ".") {
            var message = "the module path has an extension '\(file[dot...])' that isn't '.js'"
            // `mlb.first_place_team`, written as in JavaScript (`api.mlb.first_place_team`): the function after a dot.
            let name = file[file.index(after: dot)...]
            if parts.count == 1, Self.isIdentifier(name) {
                let module = module.dropLast(name.count + 1)
                message += "; a function path is written module:function, such as '\(module):\(name)'"
            }
            throw UdfPathError(path: text, message: message)
        }
        guard Self.isIdentifier(function) else {
            throw UdfPathError(
                path: text,
                message:
                    "'\(function)' is not a valid function name (letters, digits and '_', not starting with a digit, at most 64)"
            )
        }
        // The canonical form (`module:function`, `default` spelled out) must fit too.
        guard module.utf8.count + 1 + function.utf8.count <= Self.maxLength else {
            throw UdfPathError(path: text, message: "it is longer than \(Self.maxLength) bytes")
        }
        self.module = String(module)
        self.function = String(function)
    }

    public init(module: String, function: String) {
        self.module = module
        self.function = function
    }

    /// `module:function` without `.js` (the JS client's canonical form), e.g. `messages:list`, `m:default`.
    public var canonical: String { "\(module):\(function)" }

    /// `module.js:function`, the form the Rust/Python client resubscribes with after a reconnect.
    public var rustCanonical: String { "\(module).js:\(function)" }

    public var description: String { canonical }

    /// The canonical form of `text`, or `nil` when it is not a valid path.
    public static func canonicalize(_ text: String) -> String? {
        (try? UdfPath(parsing: text))?.canonical
    }

    private static func isModuleByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x2D
            || b == 0x2E
    }

    /// A Convex identifier: ASCII letters, digits and `_`, not starting with a digit, not all `_`, at most 64.
    static func isIdentifier(_ s: Substring) -> Bool {
        let utf8 = s.utf8
        guard let first = utf8.first, utf8.count <= 64, !(first >= 0x30 && first <= 0x39) else { return false }
        guard !utf8.allSatisfy({ $0 == 0x5F }) else { return false }
        return utf8.allSatisfy { isModuleByte($0) && $0 != 0x2D && $0 != 0x2E }
    }
}

/// A function path that cannot name a function.
public struct UdfPathError: Error, Hashable, Sendable, CustomStringConvertible {
    public let path: String
    public let message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "Invalid function path \"\(Self.printable(path))\": \(message)" }

    /// The path safe to echo: control characters and non-ASCII become `\u{…}` escapes, long text is cut.
    package static func printable(_ text: String, limit: Int = 200) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(limit) {
            if scalar.value < 0x20 || scalar.value > 0x7E {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if text.unicodeScalars.count > limit { out += "…" }
        return out
    }
}
