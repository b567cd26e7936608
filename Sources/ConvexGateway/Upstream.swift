import ConvexValues
import Foundation

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
    /// The function failed some other way; `message` is the deployment's message.
    case functionFailed(message: String)
    /// The deployment could not be reached (or the connection was lost while an action ran).
    case unavailable(String)
    /// The deployment did not answer in time.
    case timeout(seconds: Double)
    /// The deployment refused the caller's credentials.
    case unauthenticated(String)
}

extension UpstreamFailure {
    /// The one mapping from upstream failures to HTTP statuses (see README "Errors").
    ///
    /// Convex reports an unknown function and an argument validation failure as ordinary function errors, so they
    /// are told apart by the deployment's own message prefixes.
    public var gatewayError: GatewayError {
        switch self {
        case .convexError(let message, let data):
            return GatewayError(status: 422, code: .convexError, message: message, data: data)
        case .functionFailed(let message):
            let detail = Self.stripRequestID(message)
            if detail.hasPrefix("Could not find public function") || detail.hasPrefix("Could not find function") {
                return GatewayError(status: 404, code: .functionNotFound, message: detail)
            }
            if detail.hasPrefix("ArgumentValidationError") {
                return GatewayError(status: 400, code: .argumentValidation, message: detail)
            }
            return GatewayError(status: 500, code: .functionFailed, message: detail)
        case .unavailable(let detail):
            return .upstreamUnavailable(detail)
        case .timeout(let seconds):
            return .upstreamTimeout(seconds: seconds)
        case .unauthenticated(let detail):
            return GatewayError(status: 401, code: .unauthenticated, message: detail)
        }
    }

    /// Convex prefixes server errors with `[Request ID: …] Server Error` and a newline; the useful text follows.
    static func stripRequestID(_ message: String) -> String {
        guard message.hasPrefix("[Request ID:") else { return message }
        if let newline = message.firstIndex(of: "\n") {
            return String(message[message.index(after: newline)...])
        }
        if let close = message.firstIndex(of: "]") {
            return message[message.index(after: close)...].trimmingCharacters(in: .whitespaces)
        }
        return message
    }
}
