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

    @Test func aCancelledDeadlineSleepThrows() async throws {
        let clock = TestClock<Duration>()
        let elapsed = ElapsedClock(clock)
        let sleeper = Task { try await elapsed.sleep(until: .seconds(60)) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
