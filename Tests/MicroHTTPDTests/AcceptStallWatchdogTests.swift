import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

/// The rule of ``AcceptStallWatchdog``, without sockets or threads: a poke once a connection accepted before the
/// previous tick still has no request line.
@Suite struct WaitingConnectionsTests {
    @Test func aConnectionWaitingAWholePeriodEarnsAPokeUntilItsRequestArrives() {
        var waiting = WaitingConnections()
        let tick = waiting.accepted()
        var pokes = (0..<3).map { _ in waiting.advance() }
        // Accepted in the period that just ended: not yet; a whole period later and still unread: poke, every period.
        #expect(pokes == [false, true, true])
        waiting.requestArrived(acceptedAt: tick)
        pokes = [waiting.advance()]
        #expect(pokes == [false])
        #expect(waiting.waiting.isEmpty)
    }

    @Test func connectionsReadInTimeNeverEarnAPoke() {
        var waiting = WaitingConnections()
        for _ in 0..<1000 {
            let ticks = (0..<5).map { _ in waiting.accepted() }
            for tick in ticks { waiting.requestArrived(acceptedAt: tick) }
            let poke = waiting.advance()
            #expect(!poke)
        }
        // A request for a tick with nothing waiting (a late duplicate) changes nothing.
        waiting.requestArrived(acceptedAt: 3)
        #expect(waiting.waiting.isEmpty)
    }
}

@Suite("Accepted connections left unread", .serialized, .timeLimit(.minutes(5)))
struct AcceptStallWatchdogTests {
    /// A connection that sends nothing looks, to the server, like one libmicrohttpd set aside: the watchdog connects
    /// to the server's own port (the wake-up a stalled worker needs). Once the request comes, the pokes stop.
    @Test("a connection with no request for a whole period gets the workers poked; a request stops it")
    func silentConnectionIsPoked() async throws {
        try await withHTTPServer(configuration: testConfiguration(), logger: quietLogger, handler: staticHandler("ok"))
        {
            server in
            let port = try #require(server.port)
            let silent = try await blocking { try RawConnection(port: port) }
            defer { silent.close() }
            #expect(await eventually { server.acceptWatchdog.pokes.load(ordering: .relaxed) >= 1 })
            let response = try await blocking {
                try silent.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                return try silent.readResponse()
            }
            #expect(response.status == 200)
            // The poke's own connection closes at once; nothing waits any more.
            #expect(await eventually { server.acceptWatchdog.unreadConnections == 0 })
        }
    }
}
