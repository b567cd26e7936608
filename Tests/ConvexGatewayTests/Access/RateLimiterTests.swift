import Clocks
import ConvexValues
import Foundation
import HTTPFields
import Testing

@testable import ConvexGateway

struct RateLimiterTests {
    @Test func bucketRefillsAtTheRate() {
        let start = Duration.seconds(100)
        var bucket = TokenBucket(burst: 2, now: start)
        #expect(bucket.take(now: start, rate: 1, burst: 2) == nil)
        #expect(bucket.take(now: start, rate: 1, burst: 2) == nil)
        let wait = bucket.take(now: start, rate: 1, burst: 2)
        #expect(wait == .seconds(1))
        #expect(bucket.take(now: start + .milliseconds(500), rate: 1, burst: 2) == .milliseconds(500))
        #expect(bucket.take(now: start + .seconds(1), rate: 1, burst: 2) == nil)
        #expect(!bucket.isFull(now: start + .seconds(1), rate: 1, burst: 2))
        #expect(bucket.isFull(now: start + .seconds(3), rate: 1, burst: 2))
        // Refill never exceeds the burst.
        #expect(bucket.take(now: start + .seconds(100), rate: 1, burst: 2) == nil)
        #expect(bucket.take(now: start + .seconds(100), rate: 1, burst: 2) == nil)
        #expect(bucket.take(now: start + .seconds(100), rate: 1, burst: 2) != nil)
    }

    @Test func aRequestOfManySubscriptionsCostsOneTokenEach() {
        let start = Duration.seconds(100)
        var bucket = TokenBucket(burst: 10, now: start)
        #expect(bucket.take(now: start, rate: 1, burst: 10, cost: 4) == nil)
        #expect(bucket.take(now: start, rate: 1, burst: 10, cost: 7) == .seconds(1), "6 left, 7 asked")
        #expect(bucket.take(now: start, rate: 1, burst: 10, cost: 6) == nil)
        // More than the burst: taken from a full bucket, which is then in debt until the rate pays it back.
        #expect(bucket.take(now: start + .seconds(10), rate: 1, burst: 10, cost: 25) == nil)
        #expect(bucket.take(now: start + .seconds(10), rate: 1, burst: 10) == .seconds(16))
        #expect(bucket.take(now: start + .seconds(26), rate: 1, burst: 10) == nil)
    }

    @Test func aStreamOrBatchIsChargedTheRestOfItsSubscriptions() throws {
        var configuration = AccessConfiguration()
        configuration.rateLimit = 1
        configuration.rateLimitBurst = 10
        // The test clock never moves: nothing refills.
        let access = AccessControl(configuration: configuration, clock: GatewayClock(TestClock<Duration>()))
        try access.chargeSubscriptions(1, remoteAddress: "10.0.0.1")  // the access stage's one token is all
        try access.chargeSubscriptions(9, remoteAddress: "10.0.0.1")  // 8 more: 2 left
        #expect(throws: GatewayError.rateLimited(retryAfter: 1)) {
            try access.chargeSubscriptions(4, remoteAddress: "10.0.0.1")
        }
        try access.chargeSubscriptions(3, remoteAddress: "10.0.0.1")
        try access.chargeSubscriptions(10, remoteAddress: "10.0.0.2")  // each address has its own budget
        // Without a rate limit nothing is counted.
        try AccessControl(configuration: AccessConfiguration()).chargeSubscriptions(1000, remoteAddress: "10.0.0.1")
    }

    @Test func limitsEachClientSeparatelyWithRetryAfter() {
        let limiter = RateLimiter(rate: 0.5, burst: 1)
        let now = Duration.seconds(100)
        #expect(limiter.admit("10.0.0.1", now: now) == nil)
        #expect(limiter.admit("10.0.0.1", now: now) == 2)
        #expect(limiter.admit("10.0.0.2", now: now) == nil)
        #expect(limiter.admit("10.0.0.1", now: now + .seconds(1.5)) == 1)
        #expect(limiter.admit("10.0.0.1", now: now + .seconds(2)) == nil)
    }

    @Test func keysIPv6ByNetworkAndMappedIPv4ByAddress() {
        #expect(
            ClientAddress.rateLimitKey("2001:db8:1:2:aaaa::1") == ClientAddress.rateLimitKey("2001:db8:1:2:bbbb::2"))
        #expect(ClientAddress.rateLimitKey("2001:db8:1:2::1") != ClientAddress.rateLimitKey("2001:db8:1:3::1"))
        #expect(ClientAddress.rateLimitKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(ClientAddress.rateLimitKey("192.0.2.7") == "192.0.2.7")
        #expect(ClientAddress.rateLimitKey(nil) == "unknown")
    }

    @Test func forgetsQuietClientsSoMemoryStaysBounded() {
        let limiter = RateLimiter(rate: 100, burst: 1, capacity: 2000)
        let now = Duration.seconds(100)
        for i in 0..<5000 {
            _ = limiter.admit("10.1.\(i / 256).\(i % 256)", now: now + .milliseconds(i))
        }
        #expect(limiter.trackedClients <= 2000)
    }
}
