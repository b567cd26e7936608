import ConvexSyncProtocol
import Foundation

/// The hub's upstream side: one query set per identity (its connection's subscriptions), opened and closed as the
/// state machine asks, and the task that reads its transitions into the hub.
extension SubscriptionHub {
    /// Whether any subscription still belongs to the identity with this opaque id (its connection is in use).
    package func holdsSubscriptions(forIdentity id: String) -> Bool {
        state.withLock { locked in locked.hub.entries.keys.contains { $0.identity == id } }
    }

    /// Adds the upstream subscriptions among `actions` to their identity's query set, made (with the task that reads
    /// it) if the identity has none (under the lock, so a later `unsubscribe` finds the member).
    func startUpstream(_ actions: [HubState.Action], _ locked: inout Locked, upstream: any ConvexUpstream) {
        for case .subscribe(let key, let entryID, let args) in actions {
            let identity = key.identity
            if locked.querySets[identity] == nil {
                let setID = locked.nextQuerySet
                locked.nextQuerySet += 1
                let set = upstream.makeQuerySet()
                var querySet = QuerySet(id: setID, set: set)
                querySet.task = Task { [weak self] in
                    for await transition in set.transitions {
                        guard let self else { return }
                        self.receive(transition, identity: identity, querySet: setID)
                    }
                    self?.querySetEnded(identity: identity, id: setID)
                }
                locked.querySets[identity] = querySet
            }
            locked.querySets[identity]!.members[entryID] = key
            locked.querySets[identity]!.set.add(entryID, key.function, args: args)
            metrics.upstreamSubscriptionAdded()
            logger.debug("upstream subscription opened", metadata: ["convex.function": "\(key.function)"])
        }
    }

    /// Removes the upstream subscriptions among `actions` from their query sets; a set left empty is closed (under
    /// the lock).
    func stopUpstream(_ actions: [HubState.Action], _ locked: inout Locked) {
        for case .unsubscribe(let key, let entryID) in actions {
            let identity = key.identity
            guard locked.querySets[identity]?.members.removeValue(forKey: entryID) != nil,
                let querySet = locked.querySets[identity]
            else { continue }
            querySet.set.remove(entryID)
            if querySet.members.isEmpty {
                locked.querySets[identity] = nil
                querySet.task?.cancel()
                querySet.set.close()
            }
            metrics.upstreamSubscriptionRemoved()
            logger.debug("upstream subscription closed", metadata: ["convex.function": "\(key.function)"])
        }
    }

    /// A transition of the query set `querySet` of `identity`.
    private func receive(_ transition: UpstreamTransition, identity: String, querySet: UInt64) {
        // Hashed before taking the lock: hashing reads the whole value.
        let hashes = transition.changes.map { Self.hash(of: $0.result) }
        let wallMilliseconds = UInt64(max(0, clock.wallMilliseconds))
        let actions = state.withLock { locked -> [HubState.Action] in
            guard let set = locked.querySets[identity], set.id == querySet else { return [] }
            var changes: [HubState.EntryResult] = []
            for (change, hash) in zip(transition.changes, hashes) {
                guard let key = set.members[change.token] else { continue }
                changes.append(
                    HubState.EntryResult(key: key, entryID: change.token, result: change.result, hash: hash))
            }
            return locked.hub.receive(
                ts: transition.ts, identity: identity, changes: changes, wallMilliseconds: wallMilliseconds,
                now: clock.now)
        }
        perform(actions)
    }

    /// The query set's transitions ended without it being closed (its connection closed, or refused the
    /// credentials): every entry it held ends, so that streams reconnect and resubscribe.
    private func querySetEnded(identity: String, id: UInt64) {
        let actions = state.withLock { locked -> [HubState.Action] in
            guard let set = locked.querySets[identity], set.id == id else { return [] }
            locked.querySets[identity] = nil
            for _ in set.members { metrics.upstreamSubscriptionRemoved() }
            return locked.hub.connectionEnded(
                identity: identity, members: set.members.map { (key: $0.value, entryID: $0.key) })
        }
        perform(actions)
    }
}
