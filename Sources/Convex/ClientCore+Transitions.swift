import ConvexSyncProtocol

/// Reporting transition boundaries: ``ConvexClient/transitions()`` and ``ConvexQuerySet``.
extension ClientCore {
    enum Listener {
        /// Every applied Transition that changed a query.
        case all(AsyncStream<ConvexTransition>.Continuation)
        /// The new results of one query set's members.
        case querySet(AsyncStream<ConvexQuerySet.Update>.Continuation)
    }

    func addListener(_ listener: Listener) -> UInt64 {
        let (id, closed) = state.withLock { l -> (UInt64, Bool) in
            let id = l.nextID
            l.nextID += 1
            if l.sync.phase == .closed { return (id, true) }
            l.listeners[id] = listener
            return (id, false)
        }
        if closed { Self.finish(listener) }
        return id
    }

    /// Ends a listener; a query set's members are unsubscribed.
    func removeListener(_ id: UInt64) {
        let (listener, members) = state.withLock { l -> (Listener?, [SubscriberID]) in
            let members = l.listenerMembers.filter { $0.value == id }.map(\.key)
            return (l.listeners.removeValue(forKey: id), members)
        }
        for member in members { removeSubscriber(member) }
        if let listener { Self.finish(listener) }
    }

    static func finish(_ listener: Listener) {
        switch listener {
        case .all(let continuation): continuation.finish()
        case .querySet(let continuation): continuation.finish()
        }
    }

    /// Reports the effects' transition and query-set deliveries to the listeners (under the lock, so in order).
    func reportLocked(_ effects: SyncState.Effects, _ l: inout Locked) {
        if let transition = effects.transition {
            l.viewTimestamp = transition.ts
            wakeViewWaitersLocked(&l)
        }
        guard !l.listeners.isEmpty else { return }
        // Every applied Transition reaches every query set, with no changes when none of its members changed: the
        // set's reader then knows its results hold at the new timestamp too.
        var updates: [UInt64: ConvexQuerySet.Update] = [:]
        if effects.transition != nil {
            for (id, listener) in l.listeners {
                if case .querySet = listener { updates[id] = ConvexQuerySet.Update(ts: l.viewTimestamp, changes: []) }
            }
        }
        if !l.listenerMembers.isEmpty {
            for (subscriber, result) in effects.deliveries {
                guard let listener = l.listenerMembers[subscriber] else { continue }
                updates[listener, default: ConvexQuerySet.Update(ts: l.viewTimestamp, changes: [])].changes.append(
                    (ConvexQuerySet.Member(rawValue: subscriber.raw), result))
            }
        }
        for (id, update) in updates {
            if case .querySet(let continuation)? = l.listeners[id] { continuation.yield(update) }
        }
        if let transition = effects.transition, !transition.changed.isEmpty {
            let changes = transition.changed.compactMap { id -> ConvexTransition.QueryChange? in
                guard let query = l.sync.queries[id], let result = query.result else { return nil }
                return ConvexTransition.QueryChange(functionPath: query.udfPath, arguments: query.args, result: result)
            }
            let report = ConvexTransition(ts: transition.ts, changes: changes)
            for case .all(let continuation) in l.listeners.values { continuation.yield(report) }
        }
    }
}
