import Convex
import Synchronization

/// What the hot `GET` path needs of a subscription without taking the hub's lock: the current result's version
/// (``ResultVersion``, which changes whenever the result does), whether the subscription still lives, and when a `GET`
/// last read it (reads extend the keep-warm period). Times are the hub clock's (``GatewayClock/now``).
package final class LiveResult: Sendable {
    /// 0: no result yet; `retired`: the subscription is gone; otherwise the current result's version.
    private let state = Atomic<UInt64>(0)
    /// Nanoseconds of the hub clock at the last read.
    private let lastReadNanoseconds: Atomic<Int64>

    private static let retired = UInt64.max

    /// The snapshot the results of the subscription's upstream connection hold at.
    package let session: SessionView

    /// A subscription made at `now`, which counts as its first read, on the connection whose view is `session`.
    init(now: Duration = .zero, session: SessionView = SessionView()) {
        lastReadNanoseconds = Atomic(Self.nanoseconds(now))
        self.session = session
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.nanoseconds
    }

    /// The current result's version: `nil` before the first result and once the subscription is gone.
    package var version: ResultVersion? {
        let value = state.load(ordering: .acquiring)
        return value == 0 || value == Self.retired ? nil : ResultVersion(value: value)
    }

    /// Records a read at `now` (the hub clock's time), to the millisecond: keep-warm periods are seconds, and a store
    /// on every hot read would move this object's cache line between cores on every request.
    package func touch(at now: Duration) {
        let nanoseconds = Self.nanoseconds(now)
        if nanoseconds - lastReadNanoseconds.load(ordering: .relaxed) >= 1_000_000 {
            lastReadNanoseconds.store(nanoseconds, ordering: .relaxed)
        }
    }

    /// When a `GET` last read the subscription.
    var lastRead: Duration { .nanoseconds(lastReadNanoseconds.load(ordering: .relaxed)) }

    /// A new current result, of `version` (versions grow, and are never 0 or `retired`:
    /// ``ResultVersion/next(wallMilliseconds:)``). Published by the hub's owner outside its lock
    /// (``HubState/Publication``), so it may race a retirement or an older version: neither is ever undone.
    func advance(to version: ResultVersion) {
        var seen = state.load(ordering: .relaxed)
        while seen < version.value {  // `retired` is the largest value: never replaced
            let (exchanged, original) = state.compareExchange(
                expected: seen, desired: version.value, ordering: .acquiringAndReleasing)
            if exchanged { return }
            seen = original
        }
    }

    /// The subscription is gone for good.
    func retire() {
        state.store(Self.retired, ordering: .releasing)
    }
}
