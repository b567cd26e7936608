import Testing

@testable import MicroHTTPD

/// The deadlines of one connection (``ConnectionDeadline``), without I/O: time is whatever the test says it is.
@Suite("Connection deadlines")
struct ConnectionDeadlineTests {
    let rate = ConnectionDeadline.MinimumRate(bytes: 100, per: .seconds(10))

    // The events that return something, outside `#expect`, which cannot call a mutating method.
    func tick(_ deadline: inout ConnectionDeadline, _ now: Duration) -> ConnectionDeadline.TickAction {
        deadline.tick(now: now)
    }

    func arrived(_ deadline: inout ConnectionDeadline) -> Bool {
        deadline.headersArrived()
    }

    func ended(_ deadline: inout ConnectionDeadline) -> Bool {
        deadline.bodyEnded()
    }

    @Test("the first head is due within the timeout of the accept; once it arrives nothing is timed")
    func headerDeadline() {
        var deadline = ConnectionDeadline()
        deadline.accepted(now: .seconds(5), headerTimeout: .seconds(10))
        #expect(deadline.isTimed)
        #expect(tick(&deadline, .seconds(14.9)) == .none)
        #expect(arrived(&deadline))
        #expect(!deadline.isTimed)
        #expect(tick(&deadline, .seconds(100)) == .none, "later requests are the idle timeout's")
        #expect(arrived(&deadline), "the next request on the connection")
    }

    @Test("a head that has not arrived by its deadline is refused, and is not served when it arrives after")
    func lateHead() {
        var deadline = ConnectionDeadline()
        deadline.accepted(now: .zero, headerTimeout: .seconds(10))
        #expect(tick(&deadline, .seconds(10)) == .refuse)
        #expect(deadline.phase == .refused)
        #expect(!deadline.isTimed)
        #expect(tick(&deadline, .seconds(11)) == .none, "refused once")
        #expect(!arrived(&deadline))
        deadline.closed()
        #expect(deadline.phase == .closed)
    }

    @Test("without a header timeout a new connection is not timed")
    func noHeaderTimeout() {
        var deadline = ConnectionDeadline()
        deadline.accepted(now: .zero, headerTimeout: nil)
        #expect(!deadline.isTimed)
        #expect(tick(&deadline, .seconds(1000)) == .none)
    }

    @Test("a body that keeps up starts a new window at each check; one that falls behind in a window is refused")
    func bodyWindows() {
        var deadline = ConnectionDeadline()
        #expect(arrived(&deadline))
        deadline.bodyStarted(now: .seconds(1), rate: rate)
        #expect(deadline.isTimed)
        deadline.bodyReceived(60)
        #expect(tick(&deadline, .seconds(10.5)) == .none, "the first window has not ended")
        deadline.bodyReceived(40)
        #expect(tick(&deadline, .seconds(11)) == .none, "100 bytes in the first window")
        // The second window runs from 11 s: 99 bytes by its end are too few.
        deadline.bodyReceived(99)
        #expect(tick(&deadline, .seconds(20.9)) == .none)
        #expect(tick(&deadline, .seconds(21)) == .refuse)
        #expect(!ended(&deadline), "the request is not served")
    }

    @Test("a body that sends nothing after its head is refused at the end of its first window")
    func silentBody() {
        var deadline = ConnectionDeadline()
        _ = arrived(&deadline)
        deadline.bodyStarted(now: .zero, rate: rate)
        #expect(tick(&deadline, .seconds(10)) == .refuse)
    }

    @Test("a whole body ends the timing; the next body on the connection starts its own first window")
    func bodyEnds() {
        var deadline = ConnectionDeadline()
        _ = arrived(&deadline)
        deadline.bodyStarted(now: .zero, rate: rate)
        deadline.bodyReceived(10)
        #expect(ended(&deadline))
        #expect(!deadline.isTimed)
        #expect(tick(&deadline, .seconds(60)) == .none)
        deadline.bodyStarted(now: .seconds(60), rate: rate)
        #expect(tick(&deadline, .seconds(69)) == .none)
        #expect(tick(&deadline, .seconds(70)) == .refuse)
    }

    @Test("a connection refused at its accept is never served nor timed")
    func refusedAtAccept() {
        var deadline = ConnectionDeadline()
        deadline.refusedAtAccept()
        deadline.accepted(now: .zero, headerTimeout: .seconds(1))
        #expect(!deadline.isTimed)
        #expect(tick(&deadline, .seconds(5)) == .none)
        #expect(!arrived(&deadline))
        deadline.bodyStarted(now: .zero, rate: rate)
        #expect(deadline.phase == .refused)
        #expect(!ended(&deadline))
    }

    @Test("a closed connection is never refused: its socket is no longer the server's")
    func closed() {
        var deadline = ConnectionDeadline()
        deadline.accepted(now: .zero, headerTimeout: .seconds(1))
        deadline.closed()
        #expect(tick(&deadline, .seconds(5)) == .none)
        deadline.refusedAtAccept()
        #expect(deadline.phase == .closed)
    }
}
