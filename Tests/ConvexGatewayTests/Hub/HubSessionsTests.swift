import Testing

@testable import ConvexGateway

/// The hub's upstream connections on their own: the snapshot each one holds at, and the timestamp waits.
@Suite struct HubSessionsTests {
    @Test func aConnectionHoldsAtTheTimestampOfItsLastTransitionAndNeverGoesBack() {
        var sessions = HubState.Sessions()
        #expect(sessions.timestamp(of: "u1") == 0)
        let view = sessions.view(of: "u1")
        let first = sessions.advance("u1", to: 10)
        _ = sessions.advance("u1", to: 5)
        #expect(sessions.timestamp(of: "u1") == 10)
        #expect(first.view === view, "the view the hot path reads is the one to publish to")
        #expect(view.ts == 0, "the state machine writes nothing the hot path reads: its owner publishes it")
        #expect(sessions.timestamp(of: "u2") == 0)
    }

    @Test func aTransitionEndsTheWaitsOfItsIdentityThatItReached() {
        var sessions = HubState.Sessions()
        sessions.wait(1, identity: "u1", target: 10)
        sessions.wait(2, identity: "u1", target: 20)
        sessions.wait(3, identity: "u2", target: 10)
        let reached = sessions.advance("u1", to: 15).reached
        let reachedAgain = sessions.advance("u1", to: 15).reached
        let ended = sessions.connectionEnded("u1")
        let stoppedEnded = sessions.stopWaiting(2)
        let stoppedWaiting = sessions.stopWaiting(3)
        #expect(reached == [1])
        #expect(reachedAgain.isEmpty, "a wait ends once")
        #expect(ended == [2])
        #expect(!stoppedEnded && stoppedWaiting)
        #expect(sessions.timestampWaits.isEmpty)
    }

    @Test func endingEveryWaitEndsThemAllAndKeepingSomeIdentitiesForgetsTheOthers() {
        var sessions = HubState.Sessions()
        sessions.wait(1, identity: "u1", target: 10)
        sessions.wait(2, identity: "u2", target: 10)
        let ended = sessions.endAllWaits()
        #expect(Set(ended) == [1, 2])
        _ = sessions.view(of: "u1")
        _ = sessions.view(of: "u2")
        sessions.keep(only: ["u2"])
        #expect(Array(sessions.views.keys) == ["u2"])
    }
}
