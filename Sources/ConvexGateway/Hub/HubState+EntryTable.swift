import ConvexValues

extension HubState {
    /// The live subscriptions by key, with what bounds them: the table's size (`--max-subscriptions`), each caller's
    /// share of it (`--max-subscriptions-per-caller`, counted by ``charged``), and the keep-warm period after the
    /// last reader leaves.
    struct EntryTable {
        let keepWarm: Duration
        let maxSubscriptions: Int
        /// The entries one caller may have made and still live (``SubscriptionCaller``).
        let maxSubscriptionsPerCaller: Int
        var byKey: [Key: Entry] = [:]
        /// Per caller, the live entries it made (callers with none are not kept).
        private(set) var charged: [SubscriptionCaller: Int] = [:]
        private var nextID: UInt64 = 1

        init(keepWarm: Duration, maxSubscriptions: Int, maxSubscriptionsPerCaller: Int) {
            self.keepWarm = keepWarm
            self.maxSubscriptions = maxSubscriptions
            self.maxSubscriptionsPerCaller = maxSubscriptionsPerCaller
        }

        /// The limit that refuses `caller` `count` new entries, `nil` when none does.
        func refusal(adding count: Int, for caller: SubscriptionCaller) -> SubscriptionLimit? {
            guard count > 0 else { return nil }
            if byKey.count + count > maxSubscriptions { return .gateway }
            if charged[caller, default: 0] + count > maxSubscriptionsPerCaller { return .caller }
            return nil
        }

        /// Makes the entry of `key` unless there is one, charged to `owner` (`live`: what the hot path reads of it,
        /// made only when the entry is). Returns the upstream subscription to open for a new one.
        mutating func ensure(
            _ key: Key, args: ConvexValue, owner: SubscriptionCaller, live: () -> LiveResult
        ) -> Action? {
            guard byKey[key] == nil else { return nil }
            let id = nextID
            nextID += 1
            byKey[key] = Entry(id: id, args: args, owner: owner, live: live())
            charged[owner, default: 0] += 1
            return .subscribe(key, entryID: id, args: args)
        }

        /// Removes `entry`, the entry of `key`, and its charge to its owner. Returns what retires what the hot path
        /// reads of it (``Action/publish(_:)``), for the owner to carry out.
        mutating func remove(_ key: Key, _ entry: Entry) -> Action {
            byKey[key] = nil
            let left = charged[entry.owner, default: 1] - 1
            charged[entry.owner] = left > 0 ? left : nil
            return .publish(Publication(retired: [entry.live]))
        }

        /// Marks the entry of `key` idle from `now` if nobody reads it.
        mutating func markIdleIfUnread(_ key: Key, now: Duration) {
            byKey[key]?.markIdleIfUnread(now: now)
        }

        /// Removes the entries nobody has read for the keep-warm period (streams, waiting `GET`s and answered `GET`s
        /// all count as reads), and returns the upstream subscriptions to close.
        mutating func expire(now: Duration) -> [Action] {
            var actions: [Action] = []
            for (key, entry) in byKey {
                guard let idleSince = entry.idleSince, now - max(idleSince, entry.live.lastRead) >= keepWarm else {
                    continue
                }
                actions.append(remove(key, entry))
                actions.append(.unsubscribe(key, entryID: entry.id))
            }
            return actions
        }

        /// Removes every entry, and returns them (what the hot path reads of them is for the caller to retire).
        mutating func removeAll() -> [Key: Entry] {
            let all = byKey
            byKey = [:]
            charged = [:]
            return all
        }
    }
}
