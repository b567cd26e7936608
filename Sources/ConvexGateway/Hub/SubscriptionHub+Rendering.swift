import ConvexSyncProtocol
import ConvexValues

/// How the hub turns a delivery into the updates a stream gets: each result rendered once per output mode while it is
/// current, a JSON Patch made once per change and mode. The streams frame them (``StreamWire``).
extension SubscriptionHub {
    /// What one ``perform(_:)`` rendered so far, shared by its deliveries.
    struct DeliveryRenderCache {
        fileprivate var updates: [RenderedKey: SubscriptionUpdate] = [:]
        /// The results whose patch was made (or found not worth making).
        fileprivate var patched: Set<RenderedKey> = []
        /// The update made or found last, which the next stream most often wants too.
        fileprivate var last: Last?

        fileprivate mutating func remember(
            _ update: SubscriptionUpdate, of result: HubState.NewResult, format: OutputFormat
        ) {
            last = Last(result: result, format: format, update: update)
        }
    }

    /// The update made or found last, found again by its new result's identity without hashing the result's key; and
    /// the one-change transition made of it (without patches), which every next stream with that change in the same
    /// place shares, and with it the events made of it (``TransitionEventCache``).
    fileprivate struct Last {
        let result: HubState.NewResult
        let format: OutputFormat
        let update: SubscriptionUpdate
        var single: StreamTransition?
    }

    fileprivate struct RenderedKey: Hashable {
        var key: Key
        var current: String
        var format: OutputFormat
    }

    /// A delivery rendered for a stream in `format`, with patches when the stream reads them.
    func transition(
        _ delivery: HubState.Delivery, format: OutputFormat, patches: Bool, _ rendering: inout DeliveryRenderCache
    ) -> StreamTransition {
        let one = delivery.changes.count == 1 && !patches
        if one, rendering.last?.result === delivery.changes[0].result, rendering.last?.format == format,
            var single = rendering.last?.single, single.ts == delivery.ts,
            single.changes[0].member == delivery.changes[0].member
        {
            single.isFirst = delivery.isFirst
            return single
        }
        let changes = delivery.changes.map { change -> StreamTransition.MemberUpdate in
            if !patches, rendering.last?.result === change.result, rendering.last?.format == format,
                let update = rendering.last?.update
            {
                return StreamTransition.MemberUpdate(member: change.member, update: update)
            }
            let renderedKey = RenderedKey(key: change.key, current: change.current.id, format: format)
            if !patches, let rendered = rendering.updates[renderedKey] {
                rendering.remember(rendered, of: change.result, format: format)
                return StreamTransition.MemberUpdate(member: change.member, update: rendered)
            }
            var update =
                rendering.updates[renderedKey] ?? update(for: change.key, current: change.current, format: format)
            if patches, let previous = change.previous, rendering.patched.insert(renderedKey).inserted {
                update.patch = ValueDelta.patch(from: previous, to: change.current, body: update.body) {
                    render($0, format)
                }
            }
            rendering.updates[renderedKey] = update
            rendering.remember(update, of: change.result, format: format)
            return StreamTransition.MemberUpdate(member: change.member, update: update)
        }
        guard one else { return StreamTransition(ts: delivery.ts, changes: changes, isFirst: delivery.isFirst) }
        // (Its `isFirst` is set again each time it is found above.)
        let transition = StreamTransition(
            ts: delivery.ts, changes: changes, shared: TransitionEventCache(), isFirst: delivery.isFirst)
        rendering.last?.single = transition
        return transition
    }

    /// `current` rendered in `format`: the value rendered once while it is current (a failure's error body each
    /// time), with the one place its event bytes are kept.
    private func update(for key: Key, current: CurrentResult, format: OutputFormat) -> SubscriptionUpdate {
        let (cached, frame) = state.withLock { locked in
            (
                locked.hub.cachedBody(key, current: current, format: format),
                locked.hub.frame(key, current: current, format: format)
            )
        }
        switch current.result {
        case .value(let value):
            if let cached { return SubscriptionUpdate(current: current, body: cached, frame: frame) }
            let body = render(value, format)
            state.withLock { $0.hub.cache(body, key: key, current: current, format: format) }
            return SubscriptionUpdate(current: current, body: body, frame: frame)
        case .failure(let failure):
            let body = failure.gatewayError(logging: logger).body { render($0, format) }
            return SubscriptionUpdate(current: current, body: body, frame: frame)
        }
    }

    /// Identifies a result: equal results have equal hashes.
    static func hash(of result: UpstreamResult) -> ContentHash {
        var hasher = ContentHasher()
        switch result {
        case .value(let value):
            hasher.combine(0x01)
            hasher.combine(value.convexJSON())
        case .failure(let failure):
            hasher.combine(0x02)
            hasher.combine(Array(String(describing: failure).utf8))
        }
        return hasher.hash
    }
}
