/// Canonical function paths: `m:f` ≡ `m.js:f`, and `m` ≡ `m:default` (reference §4.2, `udf_path.rs`).
public struct UdfPath: Sendable, Hashable, CustomStringConvertible {
    /// Module path without the `.js` extension, e.g. `messages` or `dir/messages`.
    public let module: String
    /// Exported function name; `default` when the path had none.
    public let function: String

    /// Parses `module[:function]`; the module may contain `/` and may end in `.js`.
    /// - Throws: `UdfPathError` for an empty module or function, or a module extension other than `.js`.
    public init(parsing text: String) throws(UdfPathError) {
        var modulePart = Substring(text)
        var functionPart: Substring = "default"
        if let colon = text.lastIndex(of: ":") {
            modulePart = text[..<colon]
            functionPart = text[text.index(after: colon)...]
            if functionPart.isEmpty {
                throw UdfPathError(path: text, message: "Function name is empty")
            }
        }
        if modulePart.hasSuffix(".js") {
            modulePart = modulePart.dropLast(3)
        }
        if modulePart.isEmpty {
            throw UdfPathError(path: text, message: "Module path is empty")
        }
        if modulePart.hasPrefix("/") || modulePart.hasSuffix("/") || modulePart.contains("//") {
            throw UdfPathError(path: text, message: "Module path has an empty path component")
        }
        let lastComponent = modulePart.split(separator: "/").last ?? modulePart
        if let dot = lastComponent.lastIndex(of: ".") {
            let ext = lastComponent[lastComponent.index(after: dot)...]
            throw UdfPathError(path: text, message: "Module path has an extension '.\(ext)' that isn't '.js'")
        }
        if functionPart.contains(":") || functionPart.contains("/") {
            throw UdfPathError(path: text, message: "Function name '\(functionPart)' is not a valid identifier")
        }
        self.module = String(modulePart)
        self.function = String(functionPart)
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
}

/// A function path that cannot name a function.
public struct UdfPathError: Error, Hashable, Sendable, CustomStringConvertible {
    public let path: String
    public let message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "Invalid function path \"\(path)\": \(message)" }
}
