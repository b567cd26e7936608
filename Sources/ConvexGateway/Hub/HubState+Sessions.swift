import ConvexSyncProtocol

extension HubState {
    /// The upstream connections the hub reads, one per caller identity: the snapshot each one's results hold at
    /// (``SessionView``), and the callers waiting for an identity's results to reach a timestamp (read-your-writes).
    struct Sessions {
        /// Per identity, the timestamp of the last transition applied for it.
        private(set) var timestamps: [String: ConvexTimestamp] = [:]
        /// Per identity, what the hot path reads of it without the hub's lock, published by the owner
        /// (``Action/publish(_:)``): never read here.
        private(set) var views: [String: SessionView] = [:]
        /// The timestamp waits, by wait.
        private(set) var timestampWaits: [UInt64: (identity: String, target: ConvexTimestamp)] = [:]

        /// The timestamp the results of `identity` hold at: that of the last transition applied for it
        /// (``ConvexTimestamp/zero`` before the first).
        func timestamp(of identity: String) -> ConvexTimestamp {
            timestamps[identity] ?? .zero
        }

        /// The view of `identity`, made the first time.
        mutating func view(of identity: String) -> SessionView {
            if let view = views[identity] { return view }
            let view = SessionView()
            views[identity] = view
            return view
        }

        /// A transition of `identity`'s connection at `ts` was applied: its timestamp moves on (never back), and the
        /// waits it reached end. Returns them, with the view to publish the timestamp to.
        mutating func advance(_ identity: String, to ts: ConvexTimestamp) -> (view: SessionView, reached: [UInt64]) {
            let reached = max(ts, timestamp(of: identity))
            timestamps[identity] = reached
            return (view(of: identity), endWaits { $0.identity == identity && $0.target <= reached })
        }

        /// Waits for `identity`'s results to reach `target`.
        mutating func wait(_ wait: UInt64, identity: String, target: ConvexTimestamp) {
            timestampWaits[wait] = (identity, target)
        }

        /// Ends a wait (its deadline came, or its caller left); whether it was still waiting.
        @discardableResult
        mutating func stopWaiting(_ wait: UInt64) -> Bool {
            timestampWaits.removeValue(forKey: wait) != nil
        }

        /// The connection of `identity` ended: its waits end unreached (returned).
        mutating func connectionEnded(_ identity: String) -> [UInt64] {
            endWaits { $0.identity == identity }
        }

        /// Every wait ends unreached (returned): the hub shuts down.
        mutating func endAllWaits() -> [UInt64] {
            endWaits { _ in true }
        }

        /// Forgets the views of identities the hub no longer reads.
        mutating func keep(only identities: Set<String>) {
            views = views.filter { identities.contains($0.key) }
            timestamps = timestamps.filter { identities.contains($0.key) }
        }

        private mutating func endWaits(where done: ((identity: String, target: ConvexTimestamp)) -> Bool) -> [UInt64] {
            guard !timestampWaits.isEmpty else { return [] }
            let ended = Array(timestampWaits.filter { done($0.value) }.keys)
            for wait in ended { timestampWaits[wait] = nil }
            return ended
        }
    }
}
