import ConvexSyncProtocol
import Synchronization

/// The snapshot the hub's results of one upstream connection (one caller identity) hold at: the timestamp of the last
/// upstream transition the hub applied for it. Every current result of that identity is true at this timestamp,
/// whether or not the transition changed it. Written under the hub's lock after the transition's results; read
/// without a lock by the hot path.
package final class SessionView: Sendable {
    /// The timestamp's nanoseconds: stored as a plain `UInt64` for lock-free reads.
    private let timestamp = Atomic<UInt64>(0)

    package init() {}

    /// The Convex timestamp; ``ConvexTimestamp/zero`` before the first transition.
    package var ts: ConvexTimestamp { ConvexTimestamp(nanoseconds: timestamp.load(ordering: .acquiring)) }

    /// The hub applied a transition at `ts` (under its lock, after updating the results).
    func advance(to ts: ConvexTimestamp) {
        if ts.nanoseconds > timestamp.load(ordering: .relaxed) { timestamp.store(ts.nanoseconds, ordering: .releasing) }
    }
}
