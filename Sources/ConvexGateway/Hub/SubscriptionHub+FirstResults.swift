import ConvexValues

extension SubscriptionHub {
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
