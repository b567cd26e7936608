import ConvexSyncProtocol
import ConvexValues

/// Read-your-writes (SnapshotFloor.swift): a query answer comes from a snapshot at the floor or later.
extension GatewayCore {
    /// The oldest snapshot an answer to `request` may come from (Pipeline/SnapshotFloor.swift).
    func snapshotFloor(_ request: ParsedRequest) -> UInt64 {
        SnapshotFloor.required(
            minTimestamp: request.minTimestamp, lastCommit: lastCommit.ts, readYourWrites: configuration.readYourWrites)
    }

    /// Waits for the upstream connection, then makes the hub's results of `identity` hold at `floor` or later; the
    /// error to answer when either fails (503 unreachable, 504 when the deployment does not reach `floor` in time).
    func readyToRead(
        at floor: UInt64, identity: String, upstream: any ConvexUpstream, format: OutputFormat
    ) async -> GatewayResponse? {
        do throws(UpstreamFailure) {
            try await upstream.waitUntilConnected(timeout: configuration.connectTimeout)
        } catch {
            return errorResponse(error, format: format)
        }
        return await reachSnapshot(floor, identity: identity, upstream: upstream, format: format)
    }

    /// Makes the hub's results of `identity` hold at `floor` or later; the 504 to answer when the deployment does not
    /// get there within the upstream timeout.
    private func reachSnapshot(
        _ floor: UInt64, identity: String, upstream: any ConvexUpstream, format: OutputFormat
    ) async -> GatewayResponse? {
        guard floor > 0, hub.sessionTimestamp(of: identity) < floor else { return nil }
        let timeout = configuration.upstreamTimeout
        if await hub.reach(floor, identity: identity, upstream: upstream, timeout: timeout) { return nil }
        return errorResponse(.timestampNotReached(floor, seconds: timeout.seconds), format: format)
    }
}
