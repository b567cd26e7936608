import ConvexValues

/// What the gateway needs from a Convex deployment for one identity. `ConvexClient` provides it in production; the
/// gateway keeps one per distinct caller identity.
public protocol ConvexUpstream: Sendable {
    /// A live subscription: the current result at once, then one result per change, until the iteration ends.
    /// Function failures arrive as `.failure` elements and the subscription carries on.
    func subscribe(_ function: String, args: ConvexValue) -> AsyncStream<UpstreamResult>
    func query(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue
    func mutation(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue
    func action(_ function: String, args: ConvexValue) async throws(UpstreamFailure) -> ConvexValue
    /// Whether the connection to the deployment is up.
    var isConnected: Bool { get }
    /// Waits up to `timeout` for the connection to be up; false when it is not.
    func waitUntilConnected(timeout: Duration) async -> Bool
    /// Closes the connection and ends every subscription.
    func close() async
}

/// One element of a live subscription.
public enum UpstreamResult: Sendable, Hashable {
    case value(ConvexValue)
    case failure(UpstreamFailure)
}

/// Why an upstream call or subscription produced no value.
public enum UpstreamFailure: Error, Sendable, Hashable {
    /// The function threw a `ConvexError`; `data` is what it carried.
    case convexError(message: String, data: ConvexValue)
    /// The deployment has no public function of that name.
    case unknownFunction(message: String)
    /// The arguments did not match the function's validators.
    case invalidArguments(message: String)
    /// The function failed some other way; `message` is the deployment's message.
    case functionFailed(message: String)
    /// The deployment could not be reached.
    case unavailable(String)
    /// The connection dropped while an action ran; it may or may not have taken effect.
    case connectionLost(String)
    /// The deployment did not answer in time.
    case timeout(seconds: Double)
    /// The deployment refused the caller's credentials.
    case unauthenticated(String)
}

extension UpstreamFailure {
    /// The one mapping from upstream failures to HTTP statuses (see README "Errors").
    public var gatewayError: GatewayError {
        switch self {
        case .convexError(let message, let data):
            return GatewayError(status: 422, code: .convexError, message: message, data: data)
        case .unknownFunction(let message):
            return GatewayError(status: 404, code: .functionNotFound, message: message)
        case .invalidArguments(let message):
            return GatewayError(status: 400, code: .argumentValidation, message: message)
        case .functionFailed(let message):
            return GatewayError(status: 500, code: .functionFailed, message: message)
        case .unavailable(let detail):
            return .upstreamUnavailable(detail)
        case .connectionLost(let detail):
            return GatewayError(status: 502, code: .upstreamConnectionLost, message: detail)
        case .timeout(let seconds):
            return .upstreamTimeout(seconds: seconds)
        case .unauthenticated(let detail):
            return GatewayError(
                status: 401, code: .unauthenticated, message: detail, headers: [("WWW-Authenticate", "Bearer")])
        }
    }
}
