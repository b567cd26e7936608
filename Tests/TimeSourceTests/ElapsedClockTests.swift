import Clocks
import Foundation
import Synchronization
import Testing
import TimeSource

/// `ElapsedClock` over a test clock: readings and deadlines.
@Suite(.timeLimit(.minutes(5)))
struct ElapsedClockTests {
    @Test func aDeadlineSleepEndsWhenTheClockReadsItNotLater() async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        let deadline = elapsed.now + .seconds(7)
        // The clock moves before the sleep starts: the sleep still ends at the deadline, not 6 s past it.
        await clock.advance(by: .seconds(6))
        let sleeper = Task { try await elapsed.sleep(until: deadline) }
        await clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(elapsed.now == .seconds(7))
    }

    @Test(arguments: [1, 5])
    func aDeadlineReachedOrPassedReturnsAtOnce(seconds: Int) async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        let deadline = elapsed.now + .seconds(1)
        await clock.advance(by: .seconds(seconds))
        try await elapsed.sleep(until: deadline)  // the test clock never moves again: a wait here would hang
        #expect(elapsed.now == .seconds(seconds))
    }

    @Test func aSleepOfNoTimeReturnsAtOnce() async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        try await elapsed.sleep(for: .zero)  // the test clock never moves: a wait here would hang
        try await elapsed.sleep(for: .seconds(-1))
        #expect(elapsed.now == .zero)
    }

    /// A deadline for a wall-clock moment comes from one reading of both clocks: while the test moves the clock, every
    /// reading a thread of its own takes (off the concurrency pool, which a busy loop would hold) has its wall clock
    /// equal to its origin plus its elapsed time.
    @Test func aReadingHoldsBothClocksAtOneMoment() async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        let origin = elapsed.wallSeconds
        let reader = Reader()
        async let readings: Int = withCheckedContinuation { done in
            Thread.detachNewThread {
                var count = 0
                while !reader.stop.load(ordering: .relaxed) {
                    let reading = elapsed.read()
                    if abs(reading.wallSeconds - (origin + reading.now.seconds)) > 1e-6 {
                        reader.apart.withLock { $0.append(reading) }
                    }
                    count += 1
                }
                done.resume(returning: count)
            }
        }
        for _ in 0..<100 { await clock.advance(by: .milliseconds(20)) }
        reader.stop.store(true, ordering: .relaxed)
        let count = await readings
        #expect(count > 0)
        #expect(
            reader.apart.withLock { $0.isEmpty },
            "readings whose clocks disagree: \(reader.apart.withLock { $0.prefix(3) })")
        #expect(elapsed.read().now == .seconds(2))
    }

    /// What the reading thread shares with the test.
    final class Reader: Sendable {
        let stop = Atomic<Bool>(false)
        let apart = Mutex<[ElapsedClock.Reading]>([])
    }

    @Test func aCancelledDeadlineSleepThrows() async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        let sleeper = Task { try await elapsed.sleep(until: .seconds(60)) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
