import Synchronization

/// Whether the deployment is known to be unreachable: the last attempt of one of the gateway's connections to reach it
/// failed, and none has connected since. While it is, a request whose connection is not up is refused at once (503
/// `UpstreamUnavailable` with `Retry-After`, ``UpstreamPool/upstream(for:from:)``) instead of waiting for a connect
/// attempt of its own; the connections go on retrying in the background with their backoff (at most
/// ``ClientUpstream/maxReconnectBackoff`` apart), and the first that connects ends it, so the next request is served.
///
/// Each replica learns it from its own connections: nothing is shared between replicas, which stay stateless.
package final class DeploymentReachability: Sendable {
    private let cause = Mutex<ConnectFailureCause?>(nil)

    package init() {}

    /// A connection is up: the deployment is reachable.
    package func connected() {
        cause.withLock { $0 = nil }
    }

    /// A connection ended: `reason` is the client's. Only a failure to connect makes the deployment unreachable (a
    /// connection that was up and dropped says nothing of the next attempt).
    package func connectionEnded(reason: String) {
        guard let failure = ConnectFailureCause(reason: reason) else { return }
        cause.withLock { $0 = failure }
    }

    /// Why the deployment is known unreachable, or `nil` when it is not.
    package var unreachableCause: ConnectFailureCause? {
        cause.withLock { $0 }
    }
}
