/// The gateway's time, read from one injected `Clock` (a test clock in tests, so keep-warm, idle and rate-limit
/// windows are advanced rather than slept through): how long since the gateway started, and sleeping on that clock.
public struct GatewayClock: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void

    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleeper = { try await clock.sleep(for: $0) }
    }

    /// The real, monotonic clock.
    public static var continuous: GatewayClock { GatewayClock(ContinuousClock()) }

    /// Time since this clock was made.
    public var now: Duration { elapsed() }

    /// Sleeps on the clock.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleeper(duration)
    }
}
