import ConvexSyncProtocol
import ConvexValues

/// The render stage: what the hub decided (a result for a `GET`, a delivery for a stream) made into what a reader
/// gets. Each result is rendered once per output mode and a JSON Patch made once per change and mode, kept with the
/// result (``ResultRenderings``), never in the hub's state: nothing here takes the hub's lock. The streams frame the
/// updates (``StreamWire``).
extension SubscriptionHub {
    /// What one ``perform(_:)`` (or one thread of it) rendered last, which the next stream most often wants too: found
    /// again by its result's identity, without asking the result's ``ResultRenderings``.
    struct DeliveryRenderCache {
        fileprivate var last: Last?
    }

    /// The update made or found last; and the one-change transition made of it (without patches), which every next
    /// stream with that change in the same place shares, and with it the events made of it (``TransitionEventCache``).
    fileprivate struct Last {
        let result: HubState.NewResult
        let format: OutputFormat
        let update: SubscriptionUpdate
        var single: StreamTransition?
    }

    /// A delivery rendered for a stream in `format`, with patches when the stream reads them.
    func transition(
        _ delivery: HubState.Delivery, format: OutputFormat, patches: Bool, _ rendering: inout DeliveryRenderCache
    ) -> StreamTransition {
        let one = delivery.changes.count == 1 && !patches
        if one, var single = rendering.last?.single, rendering.last?.result === delivery.changes[0].result,
            rendering.last?.format == format, single.ts == delivery.ts,
            single.changes[0].member == delivery.changes[0].member
        {
            single.isFirst = delivery.isFirst
            return single
        }
        let changes = delivery.changes.map { change -> StreamTransition.MemberUpdate in
            if !patches, let last = rendering.last, last.result === change.result, last.format == format {
                return StreamTransition.MemberUpdate(member: change.member, update: last.update)
            }
            let update = self.update(of: change.result, format: format, patches: patches)
            rendering.last = Last(result: change.result, format: format, update: update)
            return StreamTransition.MemberUpdate(member: change.member, update: update)
        }
        guard one else { return StreamTransition(ts: delivery.ts, changes: changes, isFirst: delivery.isFirst) }
        // (Its `isFirst` is set again each time it is found above.)
        let transition = StreamTransition(
            ts: delivery.ts, changes: changes, shared: TransitionEventCache(), isFirst: delivery.isFirst)
        rendering.last?.single = transition
        return transition
    }

    /// `result` rendered in `format` (made once per mode), with its patch when the stream reads patches and the result
    /// replaced another.
    private func update(of result: HubState.NewResult, format: OutputFormat, patches: Bool) -> SubscriptionUpdate {
        let current = result.current
        guard patches, let previous = result.previous else {
            return result.renderings.update(format) { rendering(of: current, in: format) }
        }
        return result.renderings.update(format) { update in
            ValueDelta.patch(from: previous, to: current, body: update.body) { self.render($0, format) }
        } make: {
            rendering(of: current, in: format)
        }
    }

    /// `current` rendered in `format`: a value's JSON, or a failure's error body.
    private func rendering(of current: CurrentResult, in format: OutputFormat) -> SubscriptionUpdate {
        switch current.result {
        case .value(let value):
            SubscriptionUpdate(current: current, body: render(value, format))
        case .failure(let failure):
            SubscriptionUpdate(
                current: current, body: failure.gatewayError(logging: logger).body { render($0, format) })
        }
    }

    // MARK: GET

    /// The current result of a live subscription, rendered, with the subscription's ``LiveResult``.
    package struct CurrentBody: Sendable {
        package var current: CurrentResult
        /// The rendered value (empty for a failure).
        package var body: [UInt8]
        package var live: LiveResult
        /// The Convex timestamp of the snapshot the result holds at (its connection's last transition).
        package var ts: ConvexTimestamp
    }

    /// The hot path: the rendered body of a live subscription's current result, without waiting. A read extends
    /// the subscription's keep-warm period.
    package func currentBody(for key: Key, format: OutputFormat) -> CurrentBody? {
        guard let (current, renderings, live, ts) = state.withLock({ $0.hub.current(key) }) else { return nil }
        live.touch(at: clock.now)
        return CurrentBody(current: current, body: body(of: current, renderings, format), live: live, ts: ts)
    }

    /// The current results of `keys` (all of one identity), rendered in `format`, all read at once: one snapshot, at
    /// the returned timestamp. `nil` unless every key has a current result. A read extends each keep-warm period.
    package func currentBodies(for keys: [Key], format: OutputFormat) -> (ts: ConvexTimestamp, bodies: [CurrentBody])? {
        let read = state.withLock { locked -> (ConvexTimestamp, [(CurrentResult, ResultRenderings, LiveResult)])? in
            var results: [(CurrentResult, ResultRenderings, LiveResult)] = []
            for key in keys {
                guard let (current, renderings, live, _) = locked.hub.current(key) else { return nil }
                results.append((current, renderings, live))
            }
            return (locked.hub.timestamp(of: keys.first?.identity ?? ""), results)
        }
        guard let (ts, results) = read else { return nil }
        let now = clock.now
        let bodies = results.map { current, renderings, live in
            live.touch(at: now)
            return CurrentBody(current: current, body: body(of: current, renderings, format), live: live, ts: ts)
        }
        return (ts, bodies)
    }

    /// A `GET`'s body of `current`: its value rendered in `format` (made once per mode), empty for a failure.
    private func body(of current: CurrentResult, _ renderings: ResultRenderings, _ format: OutputFormat) -> [UInt8] {
        guard case .value = current.result else { return [] }
        return renderings.update(format) { rendering(of: current, in: format) }.body
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
