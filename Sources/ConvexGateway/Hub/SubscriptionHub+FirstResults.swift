import ConvexSyncProtocol
import ConvexValues

/// The cold path of `GET`s, batch `GET`s and streams: a subscription's first result, waited for.
extension SubscriptionHub {
    /// How a wait for a subscription's first result ended.
    package enum FirstResult: Sendable {
        /// The result, with the timestamp of the snapshot it holds at.
        case result(current: CurrentResult, ts: ConvexTimestamp)
        /// Refused at once: nothing subscribes to the key, and `limit` is reached (the gateway's subscription
        /// limit, or the caller's). No subscription was made and nothing waited.
        case full(SubscriptionLimit)
        /// No result came within the timeout, or none will (its upstream ended, the caller left, the hub shut down).
        case noResult

        /// The result with its timestamp; `nil` when none came.
        package var read: (current: CurrentResult, ts: ConvexTimestamp)? {
            if case .result(let current, let ts) = self { (current: current, ts: ts) } else { nil }
        }

        var isFull: Bool { limit != nil }

        /// The limit that refused it, if one did.
        var limit: SubscriptionLimit? {
            if case .full(let limit) = self { limit } else { nil }
        }
    }

    /// The cold path: subscribes (or joins a subscription that has no result yet) and waits up to `timeout` for the
    /// first result; the subscription then stays warm for later requests. A subscription it makes is charged to
    /// `caller`. At the subscription limit, or the caller's, a key nothing subscribes to is refused at once (`.full`:
    /// the caller then makes a one-shot call or answers 503 or 429). The wait ends early, keeping nothing, when the
    /// calling task is cancelled (its client left).
    package func firstResult(
        for key: Key, args: ConvexValue, caller: SubscriptionCaller = .unknown, upstream: any ConvexUpstream,
        timeout: Duration
    ) async -> FirstResult {
        let deadline = clock.now + timeout
        let wake = OneShot<(current: CurrentResult, ts: ConvexTimestamp)?>()
        let (wait, start) = state.withLock { locked -> (UInt64, HubState.WaitStart) in
            let wait = locked.newWait()
            let start = locked.hub.wait(wait, for: key, args: args, caller: caller, deadline: deadline, now: clock.now)
            if case .waiting(let actions) = start {
                locked.wakes[wait] = .firstResult(wake)
                startUpstream(actions, &locked, upstream: upstream)
            }
            return (wait, start)
        }
        let read: (current: CurrentResult, ts: ConvexTimestamp)?
        switch start {
        case .ready(let ready):
            return .result(current: ready.current, ts: ready.ts)
        case .full(let limit):
            return .full(limit)
        case .shutDown:
            return .noResult
        case .waiting(let actions):
            perform(actions)  // its deadline (the subscription was opened under the lock)
            read = await awaiting(wait) { await wake.value() }
        }
        guard let read else { return .noResult }
        return .result(current: read.current, ts: read.ts)
    }

    /// The first result of every subscription, waited for all at once (as
    /// ``firstResult(for:args:caller:upstream:timeout:)`` each), in the order given. One refused by a subscription
    /// limit fails the request whatever the others bring, so the others then stop waiting (`.noResult`), and the
    /// subscriptions the request made are closed at once, not kept warm. The one wait
    /// of the stages that answer many queries at once: batch `GET`s and streams.
    func firstResults(
        of subscriptions: [(key: Key, args: ConvexValue)], caller: SubscriptionCaller = .unknown,
        upstream: any ConvexUpstream, timeout: Duration
    ) async -> [FirstResult] {
        await withTaskGroup(of: (Int, FirstResult).self) { group in
            for (index, subscription) in subscriptions.enumerated() {
                group.addTask {
                    let first = await self.firstResult(
                        for: subscription.key, args: subscription.args, caller: caller, upstream: upstream,
                        timeout: timeout)
                    return (index, first)
                }
            }
            var firsts = [FirstResult](repeating: .noResult, count: subscriptions.count)
            for await (index, first) in group {
                firsts[index] = first
                if first.isFull { group.cancelAll() }
            }
            if firsts.contains(where: \.isFull) { release(subscriptions.map(\.key), madeBy: caller) }
            return firsts
        }
    }

    /// Closes the subscriptions of `keys` that `caller` made and nobody reads: its request was refused.
    private func release(_ keys: [Key], madeBy caller: SubscriptionCaller) {
        let actions = state.withLock { locked in
            let actions = locked.hub.release(keys, madeBy: caller)
            stopUpstream(actions, &locked)
            return actions
        }
        perform(actions)
    }

    /// ``noFirstResult(_:timeout:)``, unless the deployment refused the connection's credentials (the token expired,
    /// or was never valid): the connection's query set then ends, and a member added as it ended never gets a result,
    /// so the answer is that refusal (401), not a timeout.
    func noFirstResult(_ first: FirstResult, timeout: Duration, upstream: any ConvexUpstream) async -> GatewayError {
        if !first.isFull, let refusal = await upstream.credentialsRefusal() {
            return refusal.gatewayError(logging: logger)
        }
        return noFirstResult(first, timeout: timeout)
    }

    /// Why a first result did not come: the subscription limit refused it (503 `Overloaded`), or the caller's (429
    /// `TooManySubscriptions`, naming the limit), each with `Retry-After`; else the deployment did not answer within
    /// `timeout` (504 `UpstreamTimeout`).
    func noFirstResult(_ first: FirstResult, timeout: Duration) -> GatewayError {
        switch first.limit {
        case .gateway?:
            return .subscriptionLimitReached
        case .caller?:
            let (limit, keepWarm) = state.withLock { ($0.hub.table.maxSubscriptionsPerCaller, $0.hub.table.keepWarm) }
            return .callerSubscriptionLimitReached(limit: limit, keepWarm: keepWarm)
        case nil:
            return .upstreamTimeout(seconds: timeout.seconds)
        }
    }
}
