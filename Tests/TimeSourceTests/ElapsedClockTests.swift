import Clocks
import Testing
import TimeSource

/// `ElapsedClock` over a test clock: readings and deadlines.
@Suite(.timeLimit(.minutes(1)))
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

    /// A deadline for a wall-clock moment comes from one reading of both clocks: while another task moves the clock,
    /// every reading's wall clock is still its origin plus its elapsed time.
    @Test func aReadingHoldsBothClocksAtOneMoment() async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        let origin = elapsed.wallSeconds
        let mover = Task {
            for _ in 0..<500 { await clock.advance(by: .milliseconds(4)) }
        }
        var apart: [ElapsedClock.Reading] = []
        for readings in 1...20000 {
            let reading = elapsed.read()
            if abs(reading.wallSeconds - (origin + reading.now.seconds)) > 1e-6 { apart.append(reading) }
            if readings % 100 == 0 { await Task.yield() }
        }
        await mover.value
        #expect(apart.isEmpty, "readings whose clocks disagree: \(apart.prefix(3))")
        #expect(elapsed.read().now == .seconds(2))
    }

    @Test func aCancelledDeadlineSleepThrows() async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        let sleeper = Task { try await elapsed.sleep(until: .seconds(60)) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
