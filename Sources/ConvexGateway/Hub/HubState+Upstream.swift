import ConvexSyncProtocol

extension HubState {
    // MARK: Upstream

    /// An upstream transition of the connection of `identity`: the new results of some entries (a result for an entry
    /// that is not there any more is ignored). `wallMilliseconds` (the wall clock) keeps event ids growing across
    /// gateway restarts and replicas. Each stream gets one delivery with every change of its subscriptions; timestamp
    /// waits of the identity that the transition reached end last.
    mutating func receive(
        ts: ConvexTimestamp, identity: String, changes: [EntryResult], wallMilliseconds: UInt64, now: Duration
    ) -> [Action] {
        var batch = TransitionBatch(ts: ts)
        for change in changes {
            // In place: a copy of the entry would copy its fan-out slots when a stream joins them.
            table.byKey[change.key]?.receive(change, wallMilliseconds: wallMilliseconds, now: now, into: &batch)
        }
        // After the results: a reader that sees the new timestamp finds them.
        let (view, reached) = sessions.advance(identity, to: ts)
        batch.publish(ts, of: view)
        var actions = batch.actions(holding: &resuming)
        if !reached.isEmpty { actions.append(.reached(waiters: reached, true)) }
        waits.ending(&actions)
        return actions
    }

    /// The upstream subscription ended without being cancelled (its connection closed): streams end so that their
    /// clients reconnect and resubscribe, and waiting `GET`s get no result.
    mutating func upstreamEnded(_ key: Key, entryID: UInt64) -> [Action] {
        var actions = removeEnded(key, entryID: entryID)
        waits.ending(&actions)
        return actions
    }

    /// The connection of `identity` ended for the hub (closed, or it refused the credentials): each of its entries
    /// (`members`: key and entry id) ends as ``upstreamEnded(_:entryID:)``, and its timestamp waits get `false`.
    mutating func connectionEnded(identity: String, members: [(key: Key, entryID: UInt64)]) -> [Action] {
        var actions: [Action] = []
        for (key, entryID) in members { actions += removeEnded(key, entryID: entryID) }
        let ended = sessions.connectionEnded(identity)
        if !ended.isEmpty { actions.append(.reached(waiters: ended, false)) }
        waits.ending(&actions)
        return actions
    }

    // MARK: Time

    /// The sweeper's tick: closes subscriptions nobody has read for the keep-warm period (streams, waiting `GET`s
    /// and answered `GET`s all count as reads).
    mutating func tick(now: Duration) -> [Action] {
        let actions = table.expire(now: now)
        if !actions.isEmpty { sessions.keep(only: Set(table.byKey.keys.map(\.identity))) }
        return actions
    }

    /// A request of `caller` that needed the subscriptions of `keys` was refused (a subscription limit refused one of
    /// them): the ones it made and nobody reads are closed now, not kept warm, so a refused request holds no place
    /// in the table.
    mutating func release(_ keys: [Key], madeBy caller: SubscriptionCaller) -> [Action] {
        var actions: [Action] = []
        for key in Set(keys) {
            guard let entry = table.byKey[key], entry.owner == caller, !entry.hasReaders else { continue }
            actions.append(table.remove(key, entry))
            actions.append(.unsubscribe(key, entryID: entry.id))
        }
        if !actions.isEmpty { sessions.keep(only: Set(table.byKey.keys.map(\.identity))) }
        return actions
    }

    /// Ends everything; later attaches fail with `.shuttingDown`.
    mutating func shutdown() -> [Action] {
        isShutDown = true
        let removed = table.removeAll()
        var actions: [Action] = [.publish(Publication(retired: removed.values.map(\.live)))]
        for (key, entry) in removed {
            actions.append(.unsubscribe(key, entryID: entry.id))
            actions += ending(entry)
        }
        let ended = sessions.endAllWaits()
        if !ended.isEmpty { actions.append(.reached(waiters: ended, false)) }
        waits.ending(&actions)
        return actions
    }

    /// The entry of `key` ended upstream, if `entryID` is still its id: removed, and what its ending does (the waits'
    /// deadlines are left to the caller, which cancels them once for all the actions).
    private mutating func removeEnded(_ key: Key, entryID: UInt64) -> [Action] {
        guard let entry = table.byKey[key], entry.id == entryID else { return [] }
        return [table.remove(key, entry)] + ending(entry)
    }

    /// `entry` ends: what its ending does, and its streams are not held back any more.
    private mutating func ending(_ entry: Entry) -> [Action] {
        let actions = entry.ending()
        for case .end(let sinks) in actions { for sink in sinks { resuming.drop(ObjectIdentifier(sink)) } }
        return actions
    }
}
