import ConvexSyncProtocol
import Synchronization

/// The snapshot the hub's results of one upstream connection (one caller identity) hold at: the timestamp of the last
/// upstream transition the hub applied for it. Every current result of that identity is true at this timestamp,
/// whether or not the transition changed it. Written by the hub's owner after leaving its lock, after the
/// transition's results' versions; read without a lock by the hot path.
package final class SessionView: Sendable {
    /// The timestamp's nanoseconds: stored as a plain `UInt64` for lock-free reads.
    private let timestamp = Atomic<UInt64>(0)

    package init() {}

    /// The Convex timestamp; ``ConvexTimestamp/zero`` before the first transition.
    package var ts: ConvexTimestamp { ConvexTimestamp(nanoseconds: timestamp.load(ordering: .acquiring)) }

    /// The hub applied a transition at `ts`: published by its owner outside its lock, after the results' versions
    /// (``HubState/Publication``). Never moves back.
    func advance(to ts: ConvexTimestamp) {
        var seen = timestamp.load(ordering: .relaxed)
        while seen < ts.nanoseconds {
            let (exchanged, original) = timestamp.compareExchange(
                expected: seen, desired: ts.nanoseconds, ordering: .acquiringAndReleasing)
            if exchanged { return }
            seen = original
        }
    }
}
