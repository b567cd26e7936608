/// Reconnect delays: exponential from `initial` up to `maximum`, with full jitter
/// (a uniformly random fraction of the cap), reset after the server sends a good message.
struct Backoff: Sendable, Hashable {
    let initial: Duration
    let maximum: Duration
    /// Consecutive failures since the last reset.
    private(set) var failures: Int = 0

    init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The cap for the next delay: `min(initial · 2^failures, maximum)`.
    var currentCap: Duration {
        var cap = initial
        var doublings = failures
        while doublings > 0, cap < maximum {
            cap = cap * 2
            doublings -= 1
        }
        return min(cap, maximum)
    }

    /// The delay before the next attempt, given a random fraction in `0...1`; counts one more failure.
    mutating func nextDelay(jitter fraction: Double) -> Duration {
        let cap = currentCap
        failures += 1
        let clamped = min(max(fraction, 0), 1)
        return cap * clamped
    }

    mutating func reset() {
        failures = 0
    }
}
