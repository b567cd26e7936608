/// Hooks for tests of clients against the deployment: dropping and stalling sync sockets, and observing them.
extension LocalDeployment {

    /// Closes every open sync socket with a Close frame of this code and reason (default 1011 `TestClose`).
    /// A socket closes between whole mutation round trips: a mutation either has not started or has had its
    /// response and the following Transition sent.
    public func closeSyncConnections(code: UInt16 = 1011, reason: String? = "TestClose") {
        for connection in core.liveConnections { connection.post(.close(code: code, reason: reason)) }
    }

    /// While stalled, sync sockets send nothing at all — no messages, no WebSocket pings — but keep their state;
    /// held messages are sent when unstalled. Used to test clients' inactivity detection.
    public func setStalled(_ stalled: Bool) {
        core.setStalled(stalled)
    }

    /// The number of sync sockets accepted since the deployment was created.
    public var acceptedSyncConnections: Int { core.acceptedConnections }

    /// The number of open sync sockets.
    public var syncConnectionCount: Int { core.liveConnections.count }

    /// Why reconnecting clients say their previous socket ended (`lastCloseReason` of their Connect), oldest first,
    /// at most the latest 32. The Rust and Python clients put the server's `AuthError` text here.
    public var recentCloseReasons: [String] { core.recentCloseReasons }
}
