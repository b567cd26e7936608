import ConvexSyncProtocol
import ConvexValues

/// A deployment's function spec (`GET/POST /api/function_spec` with the admin key; the shape `npx convex
/// function-spec` prints), keyed by the gateway's function path (`module:function`).
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
        public var args: SpecValidator
        public var returns: SpecValidator
    }

    /// Functions by path.
    public var functions: [String: Function]

    public init(functions: [Function]) {
        self.functions = Dictionary(functions.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Reads a spec document; entries that are not functions the gateway can call (HTTP actions, unknown kinds,
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
                    args: entry["args"].map { SpecValidator(specJSON: $0) } ?? .any,
                    returns: entry["returns"].map { SpecValidator(specJSON: $0) } ?? .any))
        }
        self.init(functions: functions)
    }

    /// The public function at `path`, if the spec has one.
    public func publicFunction(_ path: UdfPath) -> Function? {
        guard let function = functions[path.canonical], function.isPublic else { return nil }
        return function
    }

    /// Coerces `args` for a call of `path` (see ``ArgumentCoercion``); unchanged when the spec does not know the
    /// function.
    public func coerce(_ args: ConvexValue, for path: UdfPath) throws(ArgumentCoercionError) -> ConvexValue {
        guard let function = publicFunction(path) else { return args }
        return try ArgumentCoercion.coerce(arguments: args, validator: function.args)
    }
}

public struct FunctionSpecError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Where the gateway fetches the function spec: the deployment URL and its admin key.
public struct FunctionSpecSource: Sendable {
    public var deploymentURL: String
    public var adminKey: Secret
    /// Least time between two fetches after the first.
    public var minimumRefreshInterval: Duration
    /// Time limit of one fetch.
    public var fetchTimeout: Duration

    public init(
        deploymentURL: String, adminKey: Secret, minimumRefreshInterval: Duration = .seconds(10),
        fetchTimeout: Duration = .seconds(5)
    ) {
        self.deploymentURL = deploymentURL
        self.adminKey = adminKey
        self.minimumRefreshInterval = minimumRefreshInterval
        self.fetchTimeout = fetchTimeout
    }
}
