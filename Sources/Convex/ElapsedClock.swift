/// Time read from one injected `Clock` (a test clock in tests, so deadlines, keep-warm, idle and rate-limit windows
/// are advanced rather than slept through): how long since this value was made, and sleeping on that clock. The
/// client's call deadlines and token refreshes read it, and so does every stage of the gateway (`GatewayClock`).
public struct ElapsedClock: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void

    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleeper = { try await clock.sleep(for: $0) }
    }

    /// The real, monotonic clock.
    public static var continuous: ElapsedClock { ElapsedClock(ContinuousClock()) }

    /// Time since this clock was made.
    public var now: Duration { elapsed() }

    /// Sleeps on the clock.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleeper(duration)
    }
}
