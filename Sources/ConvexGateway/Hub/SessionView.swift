import Synchronization

/// The snapshot the hub's results of one upstream connection (one caller identity) hold at: the timestamp of the last
/// upstream transition the hub applied for it. Every current result of that identity is true at this timestamp,
/// whether or not the transition changed it. Written under the hub's lock after the transition's results; read
/// without a lock by the hot path.
package final class SessionView: Sendable {
    private let timestamp = Atomic<UInt64>(0)

    package init() {}

    /// The Convex timestamp (nanoseconds); 0 before the first transition.
    package var ts: UInt64 { timestamp.load(ordering: .acquiring) }

    /// The hub applied a transition at `ts` (under its lock, after updating the results).
    func advance(to ts: UInt64) {
        if ts > timestamp.load(ordering: .relaxed) { timestamp.store(ts, ordering: .releasing) }
    }
}
