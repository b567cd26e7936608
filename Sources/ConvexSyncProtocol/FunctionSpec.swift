import ConvexValues

/// A deployment's function spec (`GET/POST /api/function_spec` with the admin key; the shape `npx convex
/// function-spec` prints), keyed by function path (`module:function`): what the local deployment writes and the
/// gateway reads.
public struct FunctionSpec: Sendable, Equatable {
    public enum Kind: String, Sendable, Hashable {
        case query = "Query"
        case mutation = "Mutation"
        case action = "Action"
        case httpAction = "HttpAction"
    }

    public struct Function: Sendable, Equatable {
        /// `module:function`, without the `.js` suffix.
        public var path: String
        public var kind: Kind
        public var isPublic: Bool
        /// The arguments' validator (an object validator, or `.any`).
        public var args: Validator
        public var returns: Validator

        public init(path: String, kind: Kind, isPublic: Bool, args: Validator, returns: Validator) {
            self.path = path
            self.kind = kind
            self.isPublic = isPublic
            self.args = args
            self.returns = returns
        }
    }

    /// Functions by path.
    public var functions: [String: Function]

    public init(functions: [Function]) {
        self.functions = Dictionary(functions.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Reads a spec document; entries that are not functions a client can call (HTTP actions, unknown kinds,
    /// missing identifiers) are skipped.
    public init(specJSON value: ConvexValue) throws(FunctionSpecError) {
        guard case .array(let entries)? = value["functions"] else {
            throw FunctionSpecError(message: "The function spec has no 'functions' array")
        }
        var functions: [Function] = []
        for entry in entries {
            guard case .string(let identifier)? = entry["identifier"], let path = UdfPath.canonicalize(identifier),
                case .string(let type)? = entry["functionType"], let kind = Kind(rawValue: type), kind != .httpAction
            else { continue }
            let visibility: String? = if case .string(let v)? = entry["visibility"]?["kind"] { v } else { nil }
            functions.append(
                Function(
                    path: path, kind: kind, isPublic: visibility == "public",
                    args: entry["args"].map { Validator(specJSON: $0) } ?? .any,
                    returns: entry["returns"].map { Validator(specJSON: $0) } ?? .any))
        }
        self.init(functions: functions)
    }

    /// The spec document, functions sorted by path, each identified as Convex does (`module.js:function`);
    /// `url`, when given, is the deployment's.
    public func specJSON(url: String? = nil) -> ConvexValue {
        let entries: [ConvexValue] = functions.keys.sorted().map { path in
            let function = functions[path]!
            let identifier = (try? UdfPath(parsing: path))?.rustCanonical ?? path
            return [
                "identifier": .string(identifier),
                "functionType": .string(function.kind.rawValue),
                "visibility": ["kind": function.isPublic ? "public" : "internal"],
                "args": function.args.specJSON,
                "returns": function.returns.specJSON,
            ]
        }
        var spec: [String: ConvexValue] = ["functions": .array(entries)]
        if let url { spec["url"] = .string(url) }
        return .object(spec)
    }

    /// The public function at `path`, if the spec has one.
    public func publicFunction(_ path: UdfPath) -> Function? {
        guard let function = functions[path.canonical], function.isPublic else { return nil }
        return function
    }
}

public struct FunctionSpecError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}
