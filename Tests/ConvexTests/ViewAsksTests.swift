import Testing

@testable import Convex

/// When a wait for the client's view asks the deployment for its latest snapshot (``ViewAsks``): a few times, then
/// never again however long the wait, so a timestamp the deployment never reaches costs a handful of messages.
@Suite struct ViewAsksTests {
    /// The times a wait from 0 to `deadline` asks at, following its own wake-ups.
    static func asks(until deadline: Duration) -> (asked: [Duration], wakeUps: Int) {
        var asks = ViewAsks()
        var now = Duration.zero
        var asked: [Duration] = []
        var wakeUps = 0
        while now < deadline {
            let step = asks.next(now: now, deadline: deadline)
            if step.ask { asked.append(now) }
            #expect(step.wakeAt > now || step.wakeAt == deadline)
            now = step.wakeAt
            wakeUps += 1
        }
        return (asked, wakeUps)
    }

    @Test func aLongWaitAsksFiveTimesInItsFirstSecondThenOnlyWaits() {
        let (asked, wakeUps) = Self.asks(until: .seconds(30))
        #expect(asked == [.zero, .milliseconds(50), .milliseconds(150), .milliseconds(350), .milliseconds(750)])
        #expect(wakeUps == 6, "after the last ask the wait wakes only at its deadline")
    }

    @Test func aShortWaitEndsAtItsDeadline() {
        let (asked, _) = Self.asks(until: .milliseconds(120))
        #expect(asked == [.zero, .milliseconds(50)])
        var asks = ViewAsks()
        let first = asks.next(now: .zero, deadline: .milliseconds(20))
        #expect(first.ask)
        #expect(first.wakeAt == .milliseconds(20))
    }
}
