/// The state of a ``ConvexClient``'s connection to its deployment, as ``ConvexClient/connectionStates`` reports it.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// Created, and nothing asked for a connection yet (the client connects lazily).
    case idle
    /// Opening the first WebSocket.
    case connecting
    /// The WebSocket is open and the protocol handshake sent.
    case connected
    /// The connection was lost or could not be made; the client retries after a backoff.
    /// `reason` says why the last socket ended (e.g. `InactiveServer`, `StartVersionMismatch`, a close reason).
    case reconnecting(reason: String)
    /// The deployment rejected the credentials and the client stopped retrying. Set new credentials
    /// (``ConvexClient/setAuth(token:)``, ``ConvexClient/setAdminAuth(key:)``, ``ConvexClient/setAuthProvider(_:)``
    /// or ``ConvexClient/clearAuth()``) to connect again.
    case authenticationFailed(message: String)
    /// ``ConvexClient/close()`` was called.
    case closed

    public var description: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .connected: "connected"
        case .reconnecting(let reason): "reconnecting (\(reason))"
        case .authenticationFailed(let message): "authentication failed (\(message))"
        case .closed: "closed"
        }
    }

    /// True only for ``connected``.
    public var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }
}
