import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

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

    /// At the connection limit a poke must not take a client's place: a server whose limit is one client answers
    /// that client while a connection from the watchdog's poke port is open beside it.
    @Test("the watchdog's own connection is not counted against the connection limit")
    func aPokeIsNotAClient() async throws {
        let configuration = testConfiguration {
            $0.connectionLimit = 1
            $0.idleTimeoutSeconds = 0  // the poke-like connection stays open however long the test takes
        }
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: staticHandler("ok")) {
            server in
            let port = try #require(server.port)
            let poke = try await blocking { try PokeLikeSocket(port: port, watchdog: server.acceptWatchdog) }
            defer { poke.close() }
            #expect(
                await eventually(timeout: .seconds(20)) {
                    server.acceptWatchdog.pokesAccepted.load(ordering: .relaxed) == 1
                })
            let client = try await blocking { try RawConnection(port: port) }
            defer { client.close() }
            let response = try await blocking {
                try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                return try client.readResponse()
            }
            #expect(response.status == 200)
            #expect(server.activeConnectionCount == 1)
            // Nor is it a client waiting for its first request: it earns no poke of its own.
            #expect(server.acceptWatchdog.unreadConnections == 0)
        }
    }
}

/// A connection made as the watchdog makes its pokes (its socket bound, the port told to the watchdog, then
/// connected), but held open.
private final class PokeLikeSocket: Sendable {
    let fd: Int32

    @available(*, noasync)
    init(port: Int, watchdog: AcceptStallWatchdog) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        // A failure below lets the socket go (this class has no deinit).
        func failing(_ code: POSIXErrorCode) -> POSIXError {
            _ = Glibc.close(fd)
            return POSIXError(code)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw failing(.EADDRNOTAVAIL) }
        watchdog.pokeBound(sourcePort: UInt16(bigEndian: address.sin_port))
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) == 0 }
        }
        guard connected else { throw failing(.ECONNREFUSED) }
        self.fd = fd
    }

    func close() { _ = Glibc.close(fd) }
}
