import ConvexSyncProtocol
import ConvexValues

/// The events of the hub's waits: a `GET` waiting for a first result, a long-poll `GET` waiting for a change, a caller
/// waiting for an identity's results to reach a timestamp (read-your-writes), and a wait ending early. Each wait arms a
/// deadline as it begins, and every way it ends cancels it (``HubState/Waits``).
extension HubState {
    /// How a `GET`'s wait for a first result begins. Only `waiting` keeps a wait; every other answer is final.
    enum WaitStart {
        /// Answered at once: the current result and the timestamp it holds at.
        case ready((current: CurrentResult, ts: ConvexTimestamp))
        /// Waiting; carry out the actions (the deadline, and a new upstream subscription).
        case waiting([Action])
        /// Refused: nothing subscribes to the key, and `limit` is reached (the gateway's, or the caller's).
        case full(SubscriptionLimit)
        /// Refused: the hub is shut down.
        case shutDown
    }

    /// A `GET` waits for the first result of `key` until `deadline`, subscribing upstream (charged to `caller`) if
    /// nothing does yet.
    mutating func wait(
        _ waiter: UInt64, for key: Key, args: ConvexValue, caller: SubscriptionCaller = .unknown,
        deadline: Duration, now: Duration
    ) -> WaitStart {
        if isShutDown { return .shutDown }
        if let current = table.byKey[key]?.current { return .ready((current, sessions.timestamp(of: key.identity))) }
        if table.byKey[key] == nil, let limit = table.refusal(adding: 1, for: caller) { return .full(limit) }
        var actions = ensureEntry(key, args: args, owner: caller, now: now).map { [$0] } ?? []
        table.byKey[key]!.wait(waiter)
        actions.append(waits.begin(waiter, .firstResult(key), deadline: deadline))
        return .waiting(actions)
    }

    /// A long-poll `GET`, attached as a sink (``attach(_:members:caller:now:)``), waits for the next change until
    /// `deadline`.
    mutating func waitForChange(_ wait: UInt64, deadline: Duration) -> [Action] {
        [waits.begin(wait, .change, deadline: deadline)]
    }

    /// A wait ends before what it waits for came: its deadline came, or its caller left (or, a long-poll, was
    /// answered). It gets nothing, if it still waited, and its deadline is cancelled. The one event for both, and for
    /// every kind of wait; a wait that ended already is left as it is.
    mutating func waitEnded(_ wait: UInt64, now: Duration) -> [Action] {
        guard let kind = waits.end(wait) else { return [] }
        switch kind {
        case .firstResult(let key):
            if table.byKey[key]?.waiters.remove(wait) != nil { table.markIdleIfUnread(key, now: now) }
        case .timestamp:
            sessions.stopWaiting(wait)
        case .change:
            break
        }
        return [.giveUp(waiters: [wait]), .cancelDeadlines([wait])]
    }

    /// How a wait for a timestamp begins.
    enum TimestampWaitStart {
        /// Answered at once: whether the identity's results reached the timestamp.
        case answered(Bool)
        /// Waiting; carry out the actions (the deadline).
        case waiting([Action])
    }

    /// A caller waits for the results of `identity` to hold at `target` or later, until `deadline`. `subscribed`:
    /// whether the hub reads subscriptions of the identity's connection (without, its next subscriptions start from
    /// the connection's view, so `target` is reached).
    mutating func waitForTimestamp(
        _ wait: UInt64, identity: String, target: ConvexTimestamp, subscribed: Bool, deadline: Duration
    ) -> TimestampWaitStart {
        if !subscribed || sessions.timestamp(of: identity) >= target { return .answered(true) }
        if isShutDown { return .answered(false) }
        sessions.wait(wait, identity: identity, target: target)
        return .waiting([waits.begin(wait, .timestamp, deadline: deadline)])
    }
}
