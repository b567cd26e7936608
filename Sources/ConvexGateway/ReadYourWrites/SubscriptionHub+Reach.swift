import ConvexSyncProtocol

/// The hub's side of read-your-writes: the timestamp its results of an identity hold at, and the wait for them to
/// reach a floor (``ReadYourWrites/ready(at:identity:upstream:)``).
extension SubscriptionHub {
    /// The timestamp the hub's results of `identity`'s connection hold at (``ConvexTimestamp/zero`` before its first
    /// transition).
    package func sessionTimestamp(of identity: String) -> ConvexTimestamp {
        state.withLock { $0.hub.timestamp(of: identity) }
    }

    /// Makes the results the hub serves for `identity` hold at `target` or later, within `timeout`: the connection is
    /// asked to move its view there (``ConvexUpstream/waitForView(atLeast:timeout:)``), and when the hub holds
    /// subscriptions of it, the hub waits for the transition that moved it. Returns whether `target` was reached.
    package func reach(
        _ target: ConvexTimestamp, identity: String, upstream: any ConvexUpstream, timeout: Duration
    ) async -> Bool {
        if sessionTimestamp(of: identity) >= target { return true }
        let deadline = clock.now + timeout
        guard await upstream.waitForView(atLeast: target, timeout: timeout) >= target else { return false }
        // The connection's wait may have used up most of the time: the deadline may be reached already.
        return await awaitTimestamp(target, identity: identity, until: deadline)
    }
}
