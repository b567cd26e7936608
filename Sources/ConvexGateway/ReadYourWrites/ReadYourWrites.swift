import ConvexSyncProtocol
import ConvexValues
import Logging

/// Read-your-writes (SnapshotFloor.swift), shared by the query, batch, stream and call stages: a query answer comes
/// from a snapshot at the floor or later, the floor being the newest commit this gateway answered and the caller's
/// `Convex-Min-Timestamp`.
struct ReadYourWrites: Sendable {
    let hub: SubscriptionHub
    /// Whether answers wait for the newest commit this gateway answered (`--read-your-writes`); the caller's
    /// `Convex-Min-Timestamp` is waited for either way.
    let followsCommits: Bool
    /// How long a caller waits for the upstream connection, and for the deployment to reach a floor.
    let connectTimeout: Duration
    let upstreamTimeout: Duration
    let logger: Logger
    /// The newest commit among the mutations this gateway answered.
    let lastCommit = CommitWatermark()

    /// The oldest snapshot an answer may come from, given the caller's `Convex-Min-Timestamp`.
    func floor(minTimestamp: ConvexTimestamp?) -> ConvexTimestamp {
        SnapshotFloor.required(
            minTimestamp: minTimestamp, lastCommit: lastCommit.ts, readYourWrites: followsCommits)
    }

    /// A mutation answered here committed at `ts`.
    func committed(_ ts: ConvexTimestamp) {
        lastCommit.committed(ts)
    }

    /// Waits for the upstream connection, then makes the hub's results of `identity` hold at `floor` or later.
    /// - Throws: 503 when the deployment is unreachable, 401 when it refused the identity's credentials, 504 when it
    ///   does not reach `floor` within the upstream timeout.
    func ready(at floor: ConvexTimestamp, identity: String, upstream: any ConvexUpstream) async throws(GatewayError) {
        do throws(UpstreamFailure) {
            try await upstream.waitUntilConnected(timeout: connectTimeout)
        } catch {
            throw error.gatewayError(logging: logger)
        }
        guard floor > .zero, hub.sessionTimestamp(of: identity) < floor else { return }
        let timeout = upstreamTimeout
        if await hub.reach(floor, identity: identity, upstream: upstream, timeout: timeout) { return }
        // A connection whose credentials the deployment refused never reaches the floor: the refusal is the answer.
        if let refusal = await upstream.credentialsRefusal() { throw refusal.gatewayError(logging: logger) }
        throw .timestampNotReached(floor, seconds: timeout.seconds)
    }
}
