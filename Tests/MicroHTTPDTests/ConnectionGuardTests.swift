import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

/// The connection guard (``ConnectionGuard``) on one end of a socket pair, with a clock the test moves and ticks it
/// calls itself: what it writes and when, without libmicrohttpd or its thread.
@Suite("Connection guard")
struct ConnectionGuardTests {
    /// Both ends of a Unix stream socket pair: `server` stands for the connection libmicrohttpd owns.
    final class SocketPair: Sendable {
        let server: Int32
        let client: Int32

        init() throws {
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
                throw TestFailure("socketpair() failed: errno \(errno)")
            }
            server = fds[0]
            client = fds[1]
        }

        deinit {
            close(server)
            close(client)
        }

        /// What the client end has received, without waiting, and whether the stream has ended.
        @available(*, noasync)
        func received() -> (text: String, ended: Bool) {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0 {
                    bytes += chunk[0..<count]
                    continue
                }
                return (String(decoding: bytes, as: UTF8.self), count == 0)
            }
        }
    }

    func makeGuard(
        clock: Box<Duration>, headerTimeout: Duration? = nil, rate: ConnectionDeadline.MinimumRate? = nil,
        perAddress: Int? = nil
    ) -> ConnectionGuard {
        ConnectionGuard(
            headerTimeout: headerTimeout, minimumBodyRate: rate, maxConnectionsPerAddress: perAddress,
            keysAddresses: perAddress != nil, rejectionResponse: jsonRejection, now: { clock.value })
    }

    @Test("a head that is late gets a 408 with the rejection's body on its socket, then the end of the stream")
    func lateHead() throws {
        let clock = Box(Duration.seconds(100))
        let connectionGuard = makeGuard(clock: clock, headerTimeout: .seconds(10))
        let sockets = try SocketPair()
        let context = connectionGuard.accepted(socket: sockets.server, address: nil)
        #expect(connectionGuard.timedConnectionCount == 1)
        clock.set(.seconds(109.5))
        connectionGuard.tick()
        #expect(sockets.received() == ("", false), "not yet")
        clock.set(.seconds(110))
        connectionGuard.tick()
        let (text, ended) = sockets.received()
        let body = #"{"code":"request_timeout","status":408}"#
        #expect(
            text
                == "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(ended)
        #expect(connectionGuard.timedConnectionCount == 0)
        // libmicrohttpd reads the end of the stream; a request it had read meanwhile is not served.
        #expect(!connectionGuard.headersArrived(context))
        connectionGuard.closed(context)
        connectionGuard.tick()
        #expect(sockets.received() == ("", true), "written once")
    }

    @Test("a head in time ends the timing; a connection closed before its deadline is never written to")
    func headInTimeAndClosed() throws {
        let clock = Box(Duration.zero)
        let connectionGuard = makeGuard(clock: clock, headerTimeout: .seconds(10))
        let served = try SocketPair()
        let gone = try SocketPair()
        let first = connectionGuard.accepted(socket: served.server, address: nil)
        let second = connectionGuard.accepted(socket: gone.server, address: nil)
        #expect(connectionGuard.timedConnectionCount == 2)
        #expect(connectionGuard.headersArrived(first))
        connectionGuard.closed(second)
        #expect(connectionGuard.timedConnectionCount == 0)
        clock.set(.seconds(60))
        connectionGuard.tick()
        #expect(served.received() == ("", false))
        #expect(gone.received() == ("", false))
    }

    @Test("a body that falls behind its rate gets a 408 and is not served; one that keeps up is")
    func slowBody() throws {
        let clock = Box(Duration.zero)
        let connectionGuard = makeGuard(clock: clock, rate: .init(bytes: 100, per: .seconds(10)))
        let slow = try SocketPair()
        let steady = try SocketPair()
        let slowContext = connectionGuard.accepted(socket: slow.server, address: nil)
        let steadyContext = connectionGuard.accepted(socket: steady.server, address: nil)
        #expect(connectionGuard.timedConnectionCount == 0, "no header timeout")
        for context in [slowContext, steadyContext] {
            #expect(connectionGuard.headersArrived(context))
            connectionGuard.bodyStarted(context)
            connectionGuard.bodyReceived(context, count: 150)
        }
        #expect(connectionGuard.timedConnectionCount == 2)
        clock.set(.seconds(10))
        connectionGuard.tick()
        connectionGuard.bodyReceived(slowContext, count: 99)
        connectionGuard.bodyReceived(steadyContext, count: 100)
        clock.set(.seconds(20))
        connectionGuard.tick()
        let (text, ended) = slow.received()
        #expect(text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(ended)
        #expect(steady.received() == ("", false))
        #expect(!connectionGuard.bodyEnded(slowContext))
        #expect(connectionGuard.bodyEnded(steadyContext))
        #expect(connectionGuard.timedConnectionCount == 0)
    }

    @Test("a connection over its address's share gets a 429 at once and holds no slot; a closed one gives its back")
    func addressShare() throws {
        let clock = Box(Duration.zero)
        let connectionGuard = makeGuard(clock: clock, perAddress: 1)
        let address = try #require(ClientAddressKey(numeric: "192.0.2.1"))
        let sockets = try (0..<4).map { _ in try SocketPair() }
        let first = connectionGuard.accepted(socket: sockets[0].server, address: address)
        #expect(first.countsForAddress)
        #expect(sockets[0].received() == ("", false))
        let refused = connectionGuard.accepted(socket: sockets[1].server, address: address)
        #expect(!refused.countsForAddress)
        let (text, ended) = sockets[1].received()
        #expect(text.hasPrefix("HTTP/1.1 429 Too Many Requests\r\n"))
        #expect(text.hasSuffix(#"{"code":"too_many_connections_from_address","status":429}"#))
        #expect(ended)
        #expect(!connectionGuard.headersArrived(refused))
        connectionGuard.closed(refused)
        // The refused connection held no slot: the address is still full, until its one connection closes.
        let again = connectionGuard.accepted(socket: sockets[2].server, address: address)
        #expect(!again.countsForAddress)
        connectionGuard.closed(again)
        #expect(connectionGuard.headersArrived(first))
        connectionGuard.closed(first)
        let last = connectionGuard.accepted(socket: sockets[3].server, address: address)
        #expect(last.countsForAddress)
        #expect(sockets[3].received() == ("", false))
        #expect(connectionGuard.headersArrived(last))
    }

    @Test("the bytes of an answer written on the socket: the response's own fields but its length and connection")
    func answerBytes() {
        var response = HTTPResponse(
            status: 429,
            headers: ["X-A": "1", "Content-Length": "99", "Connection": "keep-alive", "X-B": "bad\r\nX: y"],
            body: "no")
        #expect(
            String(decoding: ConnectionGuard.bytes(of: response), as: UTF8.self)
                == "HTTP/1.1 429 Too Many Requests\r\nX-A: 1\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno")
        response.status = 5
        #expect(String(decoding: ConnectionGuard.bytes(of: response), as: UTF8.self).hasPrefix("HTTP/1.1 500 "))
    }
}

/// A JSON rejection body, as the gateway's: `{"code":<identifier>,"status":<status>}`.
let jsonRejection: @Sendable (HTTPServerRejection) -> HTTPResponse = { rejection in
    HTTPResponse(
        status: rejection.status, headers: ["Content-Type": "application/json"],
        body: #"{"code":"\#(rejection.identifier)","status":\#(rejection.status)}"#)
}
