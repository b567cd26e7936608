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
        let wake = OneShot<Bool>()
        let (wait, reached) = state.withLock { locked -> (UInt64, Bool?) in
            let wait = locked.newWait()
            let subscribed = locked.querySets[identity] != nil
            let reached = locked.hub.waitForTimestamp(wait, identity: identity, target: target, subscribed: subscribed)
            if reached == nil { locked.wakes[wait] = .timestamp(wake) }
            return (wait, reached)
        }
        if let reached { return reached }
        // The connection's wait may have used up most of the time: the deadline may be reached already.
        return await awaiting(wake, number: wait, until: deadline, timedOut: false) { hub in
            hub.stopWaitingForTimestamp(wait)
        }
    }
}
