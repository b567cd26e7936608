import Foundation

/// The package's one notion of time, injected wherever a decision depends on it: how long since this value was made
/// (deadlines, keep-warm, idle and rate-limit windows, heartbeats, backoff), sleeping on that clock, and the wall clock
/// (token and ticket expiry, `nbf`, event ids). Production reads the real clocks (`continuous`); a test passes
/// `ElapsedClock(TestClock())` and advances it, so every deadline, expiry and wall-clock reading moves at once instead
/// of being slept through.
public struct ElapsedClock: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let deadlineSleeper: @Sendable (Duration) async throws -> Void
    private let wall: @Sendable () -> Double
    private let reader: @Sendable () -> Reading

    /// Time read from `clock`; the wall clock reads the real wall time when this value is made, moved on by `clock`
    /// from then on (so advancing a test clock past a token's `exp` expires it).
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        self.init(clock, wall: nil)
    }

    private init<C: Clock>(_ clock: C, wall: (@Sendable () -> Double)?) where C.Duration == Duration {
        let start = clock.now
        let elapsed: @Sendable () -> Duration = { start.duration(to: clock.now) }
        self.elapsed = elapsed
        deadlineSleeper = { deadline in
            let instant = start.advanced(by: deadline)
            // A deadline already reached returns here: some clocks (swift-clocks' `TestClock`) would otherwise
            // hold a sleep until exactly `now` until the clock next moves.
            guard clock.now < instant else { return try Task.checkCancellation() }
            try await clock.sleep(until: instant, tolerance: nil)
        }
        if let wall {
            self.wall = wall
            reader = { Reading(now: elapsed(), wallSeconds: wall()) }
        } else {
            let origin = Date().timeIntervalSince1970
            self.wall = { origin + elapsed().seconds }
            reader = {
                let now = elapsed()
                return Reading(now: now, wallSeconds: origin + now.seconds)
            }
        }
    }

    /// Both clocks at one moment: ``now`` and ``wallSeconds``.
    public struct Reading: Sendable, Hashable {
        public var now: Duration
        public var wallSeconds: Double

        public init(now: Duration, wallSeconds: Double) {
            self.now = now
            self.wallSeconds = wallSeconds
        }
    }

    /// ``now`` and ``wallSeconds`` read together. A deadline for a wall-clock moment (a token's `exp`) is
    /// `reading.now + (moment - reading.wallSeconds)`: from two separate reads, a clock that moved between them (a test
    /// clock moved by another task, or a thread preempted between the reads) would put the deadline off by the move.
    /// Over a test clock both come from one reading; the real clocks are read one right after the other.
    public func read() -> Reading { reader() }

    /// The real clocks: monotonic time for durations, the system's wall clock for wall time.
    public static var continuous: ElapsedClock {
        ElapsedClock(ContinuousClock(), wall: { Date().timeIntervalSince1970 })
    }

    /// Time since this clock was made.
    public var now: Duration { elapsed() }

    /// The wall clock: seconds since 1970, the time base of JWT claims (`exp`, `nbf`, `iat`).
    public var wallSeconds: Double { wall() }

    /// The wall clock in whole milliseconds since 1970 (stream tickets, event ids).
    public var wallMilliseconds: Int64 { Int64((wall() * 1000).rounded(.down)) }

    /// Sleeps on the clock. A sleep of no time returns at once, as a real clock's does (swift-clocks' `TestClock`
    /// would hold it until the clock next moves).
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }

    /// Sleeps until the clock reads `deadline` (a reading of `now`); returns at once when it has passed. Unlike
    /// `sleep(for: deadline - now)`, the clock moving between the reading and the sleep cannot push the wake-up later.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Duration) async throws {
        try await deadlineSleeper(deadline)
    }
}
