import ConvexSyncProtocol
import ConvexValues

// The function spec itself (``FunctionSpec``) is shared with the local deployment, in ConvexSyncProtocol.

extension FunctionSpec {
    /// Coerces `args` for a call of `path` (see ``ArgumentCoercion``); unchanged when the spec does not know the
    /// function.
    package func coerce(_ args: ConvexValue, for path: UdfPath) throws(ArgumentCoercionError) -> ConvexValue {
        guard let function = publicFunction(path) else { return args }
        return try ArgumentCoercion.coerce(arguments: args, validator: function.args)
    }
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
