import Convex
import HTTPFields
import Synchronization

/// One client's token bucket: it holds up to `burst` tokens, refills at `rate` tokens per second, and each request
/// takes its cost (one; a stream or batch `GET` one per subscription). A plain value type, tested without clocks or
/// I/O; times are the gateway clock's (``GatewayClock/now``).
struct TokenBucket: Sendable, Hashable {
    var tokens: Double
    var updated: Duration

    init(burst: Int, now: Duration) {
        tokens = Double(burst)
        updated = now
    }

    /// Takes `cost` tokens if the bucket holds them. Returns `nil` when the request may go ahead, otherwise how long
    /// until they will be there. A cost above `burst` is taken from a full bucket, which it leaves in debt: the client
    /// then waits until the debt is paid back at `rate`, so a request is charged its whole cost whatever the burst.
    mutating func take(now: Duration, rate: Double, burst: Int, cost: Int = 1) -> Duration? {
        refill(now: now, rate: rate, burst: burst)
        let needed = Double(min(cost, burst))
        if tokens >= needed {
            tokens -= Double(cost)
            return nil
        }
        return .seconds((needed - tokens) / rate)
    }

    /// Whether the bucket is full at `now`, so forgetting it changes nothing.
    func isFull(now: Duration, rate: Double, burst: Int) -> Bool {
        tokens + (now - updated).seconds * rate >= Double(burst)
    }

    private mutating func refill(now: Duration, rate: Double, burst: Int) {
        let elapsed = max(0, (now - updated).seconds)
        tokens = min(Double(burst), tokens + elapsed * rate)
        updated = now
    }
}

/// A per-client token-bucket rate limit. Clients are keyed by IP address; an IPv6 client by its /64 network, since
/// one host usually holds a whole /64. Full buckets are forgotten, so memory follows the number of busy clients.
package final class RateLimiter: Sendable {
    /// Requests per second each client may sustain.
    package let rate: Double
    /// Requests a client may send at once after being quiet.
    package let burst: Int
    /// Clients tracked at most; beyond it full buckets are swept, and if every bucket is busy the table starts over
    /// (a flood of distinct addresses then briefly gets fresh budgets rather than exhausting memory).
    let capacity: Int

    private struct State {
        var buckets: [String: TokenBucket] = [:]
        var insertionsSinceSweep = 0
    }

    private let state = Mutex(State())

    private let clock: GatewayClock

    package init(rate: Double, burst: Int, capacity: Int = 100_000, clock: GatewayClock = .continuous) {
        precondition(rate > 0 && burst >= 1, "rate limiter needs rate > 0 and burst >= 1")
        self.clock = clock
        self.rate = rate
        self.burst = burst
        self.capacity = capacity
    }

    /// Takes a request of `cost` tokens from `address`'s budget (one for most requests). Returns `nil` to go ahead,
    /// otherwise the whole seconds the client should wait (at least 1), for `Retry-After`.
    package func admit(_ address: String?, now: Duration? = nil, cost: Int = 1) -> Int? {
        let now = now ?? clock.now
        let key = ClientAddress.rateLimitKey(address)
        let wait: Duration? = state.withLock { state in
            if var bucket = state.buckets[key] {
                let wait = bucket.take(now: now, rate: rate, burst: burst, cost: cost)
                state.buckets[key] = bucket
                return wait
            }
            state.insertionsSinceSweep += 1
            if state.buckets.count >= capacity || state.insertionsSinceSweep >= max(1024, state.buckets.count) {
                sweep(&state, now: now)
            }
            var bucket = TokenBucket(burst: burst, now: now)
            let wait = bucket.take(now: now, rate: rate, burst: burst, cost: cost)
            state.buckets[key] = bucket
            return wait
        }
        guard let wait else { return nil }
        return max(1, Int(wait.seconds.rounded(.up)))
    }

    /// Clients currently tracked.
    package var trackedClients: Int { state.withLock { $0.buckets.count } }

    private func sweep(_ state: inout State, now: Duration) {
        state.insertionsSinceSweep = 0
        state.buckets = state.buckets.filter { !$0.value.isFull(now: now, rate: rate, burst: burst) }
        if state.buckets.count >= capacity {
            state.buckets.removeAll(keepingCapacity: true)
        }
    }

}
