import TimeSource

/// Settings of a ``ConvexClient``. Every field has a default suited to a Convex deployment.
///
/// | Field | Default | Meaning |
/// | --- | --- | --- |
/// | ``clientID`` | `swift-linux-0.1.0` | `Convex-Client` header: `<name>-<semver>` |
/// | ``callTimeout`` | 60 s | one-shot query, mutation and action deadline (`nil`: wait forever) |
/// | ``inactivityTimeout`` | 30 s | drop the socket after this long without a message from the server |
/// | ``connectTimeout`` | 10 s | give up on a socket that is not open after this long |
/// | ``initialBackoff`` / ``maxBackoff`` | 100 ms / 15 s | reconnect delay: full jitter over `min(initial·2ⁿ, max)` |
/// | ``pingInterval`` | 10 s | the client's own WebSocket pings; one unanswered as the next is due drops the socket |
/// | ``maxMessageSize`` | 64 MiB | the largest server message accepted |
/// | ``tokenRefreshLeeway`` | 10 s | a provider's token is refreshed this long before `exp` (at most half its lifetime) |
public struct ConvexClientConfiguration: Sendable {
    /// The `Convex-Client` header, `<name>-<semver>`.
    ///
    /// The default name is `swift-linux`: deployments know `swift` as the official Apple-only package and may
    /// judge that name by its version history, so this client names itself apart. Unknown names are accepted and
    /// get the deployment's defaults (no chunked Transitions, which only `npm` clients receive).
    public var clientID: String
    /// Deadline of one-shot ``ConvexClient/query(_:with:)``, ``ConvexClient/mutation(_:with:)`` and
    /// ``ConvexClient/action(_:with:)`` calls. On expiry the call throws ``ConvexClientError/Code/unreachable``
    /// while no connection is open, else ``ConvexClientError/Code/timeout``. `nil` waits forever.
    public var callTimeout: Duration?
    /// A socket that delivers no message for this long is dropped and reopened (`InactiveServer`). Convex
    /// deployments send a JSON `Ping` after 15 s of silence, so 30 s never trips on a healthy server.
    public var inactivityTimeout: Duration
    /// A socket not open (TCP and WebSocket handshake) after this long counts as failed.
    public var connectTimeout: Duration
    /// First reconnect delay cap; doubles per consecutive failure.
    public var initialBackoff: Duration
    /// Largest reconnect delay cap.
    public var maxBackoff: Duration
    /// Interval of the client's WebSocket ping frames (`nil`: none); a ping still unanswered when the next is due
    /// drops the socket (reason `PongTimeout`). WebSocket pings from the server are answered inside the WebSocket
    /// library and are not visible to the client, so liveness is checked with the client's own pings plus
    /// ``inactivityTimeout`` on messages.
    public var pingInterval: Duration?
    /// Largest accepted server message, in bytes.
    public var maxMessageSize: Int
    /// With a token provider (``ConvexClient/setAuthProvider(_:)``), a fresh token is fetched this long before the
    /// current one's `exp`, as convex-js does (its `authRefreshTokenLeewaySeconds`, default 10), but at most half
    /// of the token's lifetime (`exp - iat`) ahead, so short-lived tokens are refreshed too.
    public var tokenRefreshLeeway: Duration
    /// Where call deadlines, token refreshes, reconnect backoff and the socket watchdog (connect and inactivity
    /// timeouts, pings) read time from; tests pass a test clock (`ElapsedClock(TestClock())`) to advance through a
    /// deadline instead of sleeping.
    public var clock: ElapsedClock = .continuous
    /// The sync session's id (a lowercase UUID), sent in every `Connect`; `nil` (the default) makes a new random one
    /// for the client. The deployment records a session's successful mutations by request id, so a client opened
    /// with the session of an earlier one, resending one of its mutations with the same request id
    /// (``ConvexClient/mutationStamped(_:with:timeout:requestId:)``), gets the recorded result instead of a second run.
    public var sessionId: String?

    public init(
        clientID: String = "swift-linux-0.1.0",
        callTimeout: Duration? = .seconds(60),
        inactivityTimeout: Duration = .seconds(30),
        connectTimeout: Duration = .seconds(10),
        initialBackoff: Duration = .milliseconds(100),
        maxBackoff: Duration = .seconds(15),
        pingInterval: Duration? = .seconds(10),
        maxMessageSize: Int = 64 << 20,
        tokenRefreshLeeway: Duration = .seconds(10)
    ) {
        self.tokenRefreshLeeway = tokenRefreshLeeway
        self.clientID = clientID
        self.callTimeout = callTimeout
        self.inactivityTimeout = inactivityTimeout
        self.connectTimeout = connectTimeout
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.pingInterval = pingInterval
        self.maxMessageSize = maxMessageSize
    }
}
