import Testing

@testable import Convex

/// The timing rules of one socket (SocketWatchdog.swift), as a pure function of its readings.
struct SocketWatchdogTests {
    let watchdog = SocketWatchdog(
        startedAt: .seconds(100), connectTimeout: .seconds(10), inactivityTimeout: .seconds(30),
        pingInterval: .seconds(10), url: "ws://127.0.0.1:1/api/sync")

    func opened(at time: Duration, lastMessage: Duration? = nil, lastPing: Duration? = nil, awaitingPong: Bool = false)
        -> SocketActivity.Snapshot
    {
        SocketActivity.Snapshot(
            openedAt: time, lastMessage: lastMessage ?? time, lastPing: lastPing, awaitingPong: awaitingPong)
    }

    @Test func aConnectThatNeverOpensTimesOutAfterTheConnectTimeout() {
        let connecting = SocketActivity.Snapshot(lastMessage: .seconds(100))
        #expect(watchdog.check(connecting, now: .seconds(110)) == .carryOn)
        #expect(
            watchdog.check(connecting, now: .seconds(110.5))
                == .end("Connection to ws://127.0.0.1:1/api/sync timed out after 10.0 seconds"))
    }

    @Test func aSilentServerIsDroppedAfterTheInactivityTimeout() {
        let open = opened(at: .seconds(101), lastMessage: .seconds(120), lastPing: .seconds(145))
        #expect(watchdog.check(open, now: .seconds(150)) == .carryOn)
        #expect(watchdog.check(open, now: .seconds(150.001)) == .end("InactiveServer"))
    }

    @Test func aPingIsSentEachIntervalWhileTheLastOneWasAnswered() {
        #expect(watchdog.check(opened(at: .seconds(101)), now: .seconds(110.9)) == .carryOn)
        #expect(watchdog.check(opened(at: .seconds(101)), now: .seconds(111)) == .sendPing)
        let answered = opened(at: .seconds(101), lastPing: .seconds(111))
        #expect(watchdog.check(answered, now: .seconds(120.9)) == .carryOn)
        #expect(watchdog.check(answered, now: .seconds(121)) == .sendPing)
    }

    @Test func aPingUnansweredWhenTheNextIsDueDropsTheSocket() {
        let waiting = opened(at: .seconds(101), lastPing: .seconds(111), awaitingPong: true)
        #expect(watchdog.check(waiting, now: .seconds(120.9)) == .carryOn, "a pong has the whole interval")
        #expect(
            watchdog.check(waiting, now: .seconds(121))
                == .end("PongTimeout: no answer to a WebSocket ping within 10.0 seconds"))
    }

    @Test func withoutAPingIntervalNoPingIsSent() {
        var quiet = watchdog
        quiet.pingInterval = nil
        #expect(quiet.check(opened(at: .seconds(101)), now: .seconds(130)) == .carryOn)
        #expect(quiet.tick == .seconds(1))
    }

    @Test func theWatchdogLooksAtAFifthOfTheShortestPeriodAtMostASecond() {
        #expect(watchdog.tick == .seconds(1))
        var fast = watchdog
        fast.pingInterval = .milliseconds(500)
        #expect(fast.tick == .milliseconds(100))
        fast.connectTimeout = .milliseconds(200)
        #expect(fast.tick == .milliseconds(40))
    }
}
