import ConvexValues

/// The cold path of `GET`s, batch `GET`s and streams: a subscription's first result, waited for.
extension SubscriptionHub {
    /// The cold path: subscribes (or joins a subscription that has no result yet) and waits up to `timeout` for the
    /// first result; the subscription then stays warm for later requests. Returns the result with the timestamp of the
    /// snapshot it holds at; `nil` when no result came in time, or when the hub is at its subscription limit (the
    /// caller then makes a one-shot call).
    package func firstResult(
        for key: Key, args: ConvexValue, upstream: any ConvexUpstream, timeout: Duration
    ) async -> (current: CurrentResult, ts: UInt64)? {
        let deadline = clock.now + timeout
        let wake = OneShot<(current: CurrentResult, ts: UInt64)?>()
        let (wait, ready) = state.withLock { locked -> (UInt64, (current: CurrentResult, ts: UInt64)?) in
            let wait = locked.newWait()
            switch locked.hub.wait(wait, for: key, args: args, now: clock.now) {
            case .ready(let current):
                return (wait, current)
            case .waiting(let actions):
                locked.wakes[wait] = .firstResult(wake)
                startUpstream(actions, &locked, upstream: upstream)
                return (wait, nil)
            }
        }
        if let ready { return ready }
        return await awaiting(wake, number: wait, until: deadline, timedOut: nil) { [clock] hub in
            hub.stopWaiting(wait, for: key, now: clock.now)
        }
    }

    /// The first result of every subscription, waited for all at once (as ``firstResult(for:args:upstream:timeout:)``
    /// each), in the order given; `nil` for one that did not come in time or that the subscription limit refused. The
    /// one wait of the stages that answer many queries at once: batch `GET`s and streams.
    func firstResults(
        of subscriptions: [(key: Key, args: ConvexValue)], upstream: any ConvexUpstream, timeout: Duration
    ) async -> [CurrentResult?] {
        await withTaskGroup(of: (Int, CurrentResult?).self) { group in
            for (index, subscription) in subscriptions.enumerated() {
                group.addTask {
                    let first = await self.firstResult(
                        for: subscription.key, args: subscription.args, upstream: upstream, timeout: timeout)
                    return (index, first?.current)
                }
            }
            var firsts = [CurrentResult?](repeating: nil, count: subscriptions.count)
            for await (index, current) in group { firsts[index] = current }
            return firsts
        }
    }

    /// Why a first result did not come: the subscription limit is reached (503 `Overloaded`), else the deployment did
    /// not answer within `timeout` (504 `UpstreamTimeout`).
    func noFirstResult(timeout: Duration, maxSubscriptions: Int) -> GatewayError {
        subscriptionCount >= maxSubscriptions ? .overloaded : .upstreamTimeout(seconds: timeout.seconds)
    }
}
