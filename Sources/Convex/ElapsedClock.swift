/// Time read from one injected `Clock` (a test clock in tests, so deadlines, keep-warm, idle and rate-limit windows
/// are advanced rather than slept through): how long since this value was made, and sleeping on that clock. The
/// client's call deadlines and token refreshes read it, and so does every stage of the gateway (`GatewayClock`).
public struct ElapsedClock: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let deadlineSleeper: @Sendable (Duration) async throws -> Void

    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        deadlineSleeper = { deadline in
            let instant = start.advanced(by: deadline)
            // A deadline already reached returns here: some clocks (swift-clocks' `TestClock`) would otherwise
            // hold a sleep until exactly `now` until the clock next moves.
            guard clock.now < instant else { return try Task.checkCancellation() }
            try await clock.sleep(until: instant, tolerance: nil)
        }
    }

    /// The real, monotonic clock.
    public static var continuous: ElapsedClock { ElapsedClock(ContinuousClock()) }

    /// Time since this clock was made.
    public var now: Duration { elapsed() }

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
