import ConvexSyncProtocol
import ConvexValues

/// Long-poll `GET`s: a wait for the next change, as a sink attached to the hub (``ChangeWaiter``).
extension SubscriptionHub {
    /// A long-poll `GET` of one subscription or many (of one identity): waits until the result of any member differs
    /// from the one whose hash its `held` names, up to `timeout` on the hub's clock, as an attached sink (so the
    /// subscriptions stay warm meanwhile, and are made again, charged to `caller`, if they had expired). Detached
    /// whatever ends the wait.
    /// - Returns: the first changed result rendered in `format`, with the timestamp of the snapshot it comes from;
    ///   `nil` when the wait ended without a change (the timeout, a subscription's end, shutdown, or a subscription
    ///   limit).
    package func nextChange(
        of members: [Member], caller: SubscriptionCaller = .unknown, upstream: any ConvexUpstream,
        format: OutputFormat, timeout: Duration
    ) async -> (update: SubscriptionUpdate, ts: ConvexTimestamp)? {
        // The deadline is read before the waiter is visible: the clock may move as soon as it is attached.
        let deadline = clock.now + timeout
        let waiter = ChangeWaiter(format: format, held: members.map(\.held))
        do {
            try attach(waiter, members: members, caller: caller, upstream: upstream)
        } catch {
            return nil
        }
        defer { detach(waiter, members: members.map(\.key)) }
        let (wait, actions) = state.withLock { locked -> (UInt64, [HubState.Action]) in
            let wait = locked.newWait()
            locked.wakes[wait] = .change(waiter)
            return (wait, locked.hub.waitForChange(wait, deadline: deadline))
        }
        perform(actions)
        // Answered or not, the wait is over: its deadline is cancelled.
        defer { endWait(wait) }
        // The request's task is cancelled when its client leaves: the wait ends, and the sink is detached.
        return await awaiting(wait) { await waiter.outcome() }
    }
}
