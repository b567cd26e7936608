import ConvexSyncProtocol
import ConvexValues
import Synchronization

/// Query, mutation or action.
public enum FunctionKind: String, Sendable, Hashable {
    case query = "Query"
    case mutation = "Mutation"
    case action = "Action"
}

/// Public functions can be called by anyone; internal ones only with the admin key or from other functions.
public enum FunctionVisibility: String, Sendable, Hashable {
    case `public`
    case `internal`
}

/// A query handler: a deterministic function of the store snapshot, the caller and the arguments.
public typealias QueryHandler = @Sendable (QueryContext, [String: ConvexValue]) throws -> ConvexValue
/// A mutation handler: runs as the only writer; its writes commit when it returns.
public typealias MutationHandler = @Sendable (MutationContext, [String: ConvexValue]) throws -> ConvexValue
/// An action handler: may do anything, including calling queries and mutations through its context.
public typealias ActionHandler = @Sendable (ActionContext, [String: ConvexValue]) async throws -> ConvexValue

/// One registered function.
public struct RegisteredFunction: Sendable {
    public let path: UdfPath
    public let kind: FunctionKind
    public let visibility: FunctionVisibility
    /// Validators of the named arguments; `nil` accepts any arguments.
    public let args: [String: Validator]?
    /// Validator of the return value; `nil` accepts any value.
    public let returns: Validator?

    enum Handler: Sendable {
        case query(QueryHandler)
        case mutation(MutationHandler)
        case action(ActionHandler)
    }

    let handler: Handler
}

/// The functions a local deployment serves, keyed by canonical path (`messages:list`). Safe to extend while the
/// deployment runs.
public final class FunctionRegistry: Sendable {
    private let functions = Mutex<[String: RegisteredFunction]>([:])

    public init() {}

    /// Registers a query.
    /// - Parameters:
    ///   - path: `module:function` (`.js` optional, `module` alone means `module:default`).
    ///   - visibility: `.public` (default) or `.internal`.
    ///   - args: validators of the named arguments, checked before the handler runs; `nil` accepts anything.
    ///   - returns: validator of the result; `nil` accepts anything.
    public func query(
        _ path: String, visibility: FunctionVisibility = .public, args: [String: Validator]? = nil,
        returns: Validator? = nil, _ handler: @escaping QueryHandler
    ) {
        register(path, .query, visibility, args, returns, .query(handler))
    }

    /// Registers a mutation. See ``query(_:visibility:args:returns:_:)``.
    public func mutation(
        _ path: String, visibility: FunctionVisibility = .public, args: [String: Validator]? = nil,
        returns: Validator? = nil, _ handler: @escaping MutationHandler
    ) {
        register(path, .mutation, visibility, args, returns, .mutation(handler))
    }

    /// Registers an action. See ``query(_:visibility:args:returns:_:)``.
    public func action(
        _ path: String, visibility: FunctionVisibility = .public, args: [String: Validator]? = nil,
        returns: Validator? = nil, _ handler: @escaping ActionHandler
    ) {
        register(path, .action, visibility, args, returns, .action(handler))
    }

    private func register(
        _ path: String, _ kind: FunctionKind, _ visibility: FunctionVisibility,
        _ args: [String: Validator]?, _ returns: Validator?, _ handler: RegisteredFunction.Handler
    ) {
        // Registration paths are written by the program, so an invalid one is a programming error.
        guard let parsed = try? UdfPath(parsing: path) else {
            preconditionFailure("invalid function path \(path)")
        }
        let function = RegisteredFunction(
            path: parsed, kind: kind, visibility: visibility, args: args, returns: returns, handler: handler)
        functions.withLock { $0[parsed.canonical] = function }
    }

    /// The function at a canonical path.
    public func function(at path: UdfPath) -> RegisteredFunction? {
        functions.withLock { $0[path.canonical] }
    }

    /// All functions, sorted by path.
    public var all: [RegisteredFunction] {
        functions.withLock { Array($0.values) }.sorted { $0.path.canonical < $1.path.canonical }
    }

    /// The function spec in the shape `npx convex function-spec` prints.
    public func functionSpec(url: String?) -> ConvexValue {
        FunctionSpec(
            functions: all.map { f in
                FunctionSpec.Function(
                    path: f.path.canonical, kind: FunctionSpec.Kind(rawValue: f.kind.rawValue) ?? .query,
                    isPublic: f.visibility == .public, args: f.args.map(Validator.object) ?? .any,
                    returns: f.returns ?? .any)
            }
        ).specJSON(url: url)
    }
}
