import ConvexSyncProtocol
import ConvexValues

/// How the hub turns a delivery into the updates a stream gets: each result rendered once per output mode while it is
/// current, a JSON Patch made once per change and mode. The streams frame them (``StreamWire``).
extension SubscriptionHub {
    /// What one ``perform(_:)`` rendered so far, shared by its deliveries.
    struct Rendering {
        fileprivate var updates: [RenderedKey: SubscriptionUpdate] = [:]
        /// The results whose patch was made (or found not worth making).
        fileprivate var patched: Set<RenderedKey> = []
        /// The update made or found last, which the next stream most often wants too: found by its new result's
        /// identity, without hashing the result's key.
        fileprivate var lastResult: HubState.NewResult?
        fileprivate var lastFormat: OutputFormat?
        fileprivate var lastUpdate: SubscriptionUpdate?

        fileprivate mutating func remember(
            _ update: SubscriptionUpdate, of result: HubState.NewResult, format: OutputFormat
        ) {
            (lastResult, lastFormat, lastUpdate) = (result, format, update)
        }
    }

    fileprivate struct RenderedKey: Hashable {
        var key: Key
        var current: String
        var format: OutputFormat
    }

    /// A delivery rendered for a stream in `format`, with patches when the stream reads them.
    func transition(
        _ delivery: HubState.Delivery, format: OutputFormat, patches: Bool, _ rendering: inout Rendering
    ) -> StreamTransition {
        let changes = delivery.changes.map { change -> StreamTransition.Change in
            if !patches, rendering.lastResult === change.result, rendering.lastFormat == format,
                let update = rendering.lastUpdate
            {
                return StreamTransition.Change(member: change.member, update: update)
            }
            let renderedKey = RenderedKey(key: change.key, current: change.current.id, format: format)
            if !patches, let rendered = rendering.updates[renderedKey] {
                rendering.remember(rendered, of: change.result, format: format)
                return StreamTransition.Change(member: change.member, update: rendered)
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
            return StreamTransition.Change(member: change.member, update: update)
        }
        return StreamTransition(ts: delivery.ts, changes: changes)
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
    static func hash(of result: UpstreamResult) -> UInt64 {
        var hasher = ContentHash()
        switch result {
        case .value(let value):
            hasher.combine(0x01)
            hasher.combine(value.convexJSON())
        case .failure(let failure):
            hasher.combine(0x02)
            hasher.combine(Array(String(describing: failure).utf8))
        }
        return hasher.value
    }
}
