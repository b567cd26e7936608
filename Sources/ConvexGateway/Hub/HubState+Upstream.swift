extension HubState {
    // MARK: Upstream

    /// An upstream transition of the connection of `identity`: the new results of some entries (a change of an
    /// entry of another generation is ignored). `wallMilliseconds` (the wall clock) keeps event ids growing across
    /// gateway restarts and replicas. Each stream gets one delivery with every change of its subscriptions; timestamp
    /// waits of the identity that the transition reached end last.
    mutating func receive(
        ts: UInt64, identity: String, changes: [EntryResult], wallMilliseconds: UInt64, now: Duration
    ) -> [Action] {
        var batch = TransitionBatch(ts: ts)
        for change in changes {
            let key = change.key
            guard var entry = table.byKey[key], entry.generation == change.generation else { continue }
            let waiters = entry.waiters
            entry.waiters = []
            let result = entry.update(to: change, wallMilliseconds: wallMilliseconds)
            if let result { entry.route(result, into: &batch) }
            entry.markIdleIfUnread(now: now)
            table.byKey[key] = entry
            batch.resume(waiters, with: entry.current!)
        }
        var actions = batch.actions(holding: &resuming)
        // After the results: a reader that sees the new timestamp finds them.
        let reached = sessions.advance(identity, to: ts)
        if !reached.isEmpty { actions.append(.reached(waiters: reached, true)) }
        return actions
    }

    /// The upstream subscription ended without being cancelled (its connection closed): streams end so that their
    /// clients reconnect and resubscribe, and waiting `GET`s get no result.
    mutating func upstreamEnded(_ key: Key, generation: UInt64) -> [Action] {
        guard let entry = table.byKey[key], entry.generation == generation else { return [] }
        table.remove(key, entry)
        return ending(entry)
    }

    /// The connection of `identity` ended for the hub (closed, or it refused the credentials): each of its entries
    /// (`members`: key and generation) ends as ``upstreamEnded(_:generation:)``, and its timestamp waits get `false`.
    mutating func connectionEnded(identity: String, members: [(key: Key, generation: UInt64)]) -> [Action] {
        var actions: [Action] = []
        for (key, generation) in members { actions += upstreamEnded(key, generation: generation) }
        let ended = sessions.connectionEnded(identity)
        if !ended.isEmpty { actions.append(.reached(waiters: ended, false)) }
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

    /// Ends everything; later attaches fail with `.shuttingDown`.
    mutating func shutdown() -> [Action] {
        isShutDown = true
        var actions: [Action] = []
        for (key, entry) in table.removeAll() {
            actions.append(.unsubscribe(key, generation: entry.generation))
            actions += ending(entry)
        }
        let ended = sessions.endAllWaits()
        if !ended.isEmpty { actions.append(.reached(waiters: ended, false)) }
        return actions
    }

    /// `entry` ends: what its ending does, and its streams are not held back any more.
    private mutating func ending(_ entry: Entry) -> [Action] {
        let actions = entry.ending()
        for case .end(let sinks) in actions { for sink in sinks { resuming.drop(ObjectIdentifier(sink)) } }
        return actions
    }
}
