import Foundation
// Every test that uses TestSupport gets `blocking { }` and `ChildProcess`, the only ways to block or run a process.
@_exported import OffThePool
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// Helpers shared by the test targets that talk HTTP to a real server on loopback.

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Thread-safe holder for values captured by handlers.
public final class Box<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    public init(_ value: Value) { storage = Mutex(value) }
    public var value: Value { storage.withLock { $0 } }
    public func set(_ value: Value) { storage.withLock { $0 = value } }
    public func update<R>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// Polls `condition` until it holds or `timeout` passes (or the task is cancelled), and says whether it held. The one
/// polling loop of the test targets: each target's `waitUntil` records an issue when it gives up (this target does
/// not link Swift Testing); other callers `#expect` the result, or throw, so a wait that gives up fails the test.
public func eventually(
    timeout: Duration = .seconds(60), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    // Real time: a poll for something that has no event to await, bounded generously by `timeout`.
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try await condition() { return true }
        // Real time between polls: what is polled (a count, a server's state, a process) has no event to await.
        guard (try? await Task.sleep(for: .milliseconds(5))) != nil else { break }
    }
    return try await condition()
}

public struct ResponseHead: Sendable {
    public var status: Int
    public var headers: [(String, String)]

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

public struct TestResponse: Sendable {
    public var head: ResponseHead
    public var body: [UInt8]
    public var status: Int { head.status }
    public var text: String { String(decoding: body, as: UTF8.self) }
    public func header(_ name: String) -> String? { head.header(name) }
}

/// A minimal blocking HTTP/1.1 client on a raw TCP socket, so tests see exactly what goes over the wire
/// (keep-alive reuse, chunk boundaries, terminating chunk, connection close). Every member that waits on the socket is
/// unavailable from async code: the compiler sends it inside `blocking { }` (OffThePool.swift), off the pool.
public final class RawConnection: @unchecked Sendable {
    public let fd: Int32
    /// The server's port and how long a read waits, for the messages of reads that give up.
    private let port: Int
    private let receiveTimeoutSeconds: Int
    private var buffer: [UInt8] = []
    /// Whether the socket is closed; held while it is closed or shut down, so a shutdown never reaches a descriptor
    /// number that a close has let go (and another socket of this process may hold by then).
    private let closed = Mutex(false)

    /// Connects to 127.0.0.1:`port` (on loopback, `connect` returns at once: it is not kept from async code), from
    /// `source` when given: another loopback address (all of 127.0.0.0/8 is loopback on Linux) stands for another
    /// client.
    public init(port: Int, receiveTimeoutSeconds: Int = 10, source: String? = nil) throws {
        self.port = port
        self.receiveTimeoutSeconds = receiveTimeoutSeconds
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            closed.withLock { $0 = true }
            throw TestFailure("socket() failed: errno \(errno)")
        }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                let error = errno
                close()
                throw TestFailure("bind() to \(source) failed: errno \(error)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let error = errno
            // A class whose initializer throws after every property is set still runs deinit:
            // close here and mark closed, or the descriptor number (by then perhaps reused by
            // another socket in this process) is closed a second time.
            close()
            throw TestFailure("connect() to 127.0.0.1:\(port) failed: errno \(error)")
        }
    }

    deinit { close() }

    /// Closes the socket once, whichever thread asks first.
    public func close() {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            Glibc.close(fd)
        }
    }

    /// Ends the connection both ways without closing the socket: a read blocked on it in another thread returns end
    /// of stream at once (a close would leave it blocked, and free the number for another socket meanwhile). The
    /// reader closes it after. Nothing once it is closed.
    public func shutdown() {
        closed.withLock { closed in
            if !closed { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw TestFailure("send() failed: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads more bytes into the buffer; `false` at end of stream.
    @available(*, noasync)
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        guard count > 0 else {
            let error = errno
            if error == EAGAIN || error == EWOULDBLOCK {
                throw TestFailure("recv() timed out: no bytes from 127.0.0.1:\(port) within \(receiveTimeoutSeconds) s")
            }
            throw TestFailure("recv() from 127.0.0.1:\(port) failed: errno \(error)")
        }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func readLine() throws -> String {
        while true {
            if let index = buffer.indices.dropLast().first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 }) {
                let line = String(decoding: buffer[0..<index], as: UTF8.self)
                buffer.removeFirst(index + 2)
                return line
            }
            guard try fill() else { throw TestFailure("connection closed while reading a line") }
        }
    }

    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func readBytes(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw TestFailure("connection closed while reading \(count) bytes") }
        }
        let bytes = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return bytes
    }

    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func readHead() throws -> ResponseHead {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw TestFailure("bad status line: \(statusLine)") }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw TestFailure("bad header line: \(line)") }
            headers.append(
                (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
            )
        }
        return ResponseHead(status: status, headers: headers)
    }

    /// Reads one chunk of a chunked body; `nil` for the terminating chunk (trailers consumed).
    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func readChunk() throws -> [UInt8]? {
        let sizeLine = try readLine()
        guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
            throw TestFailure("bad chunk size line: \(sizeLine)")
        }
        if size == 0 {
            while try !readLine().isEmpty {}
            return nil
        }
        let data = try readBytes(size)
        guard try readLine().isEmpty else { throw TestFailure("chunk not followed by CRLF") }
        return data
    }

    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func readResponse(method: String = "GET") throws -> TestResponse {
        let head = try readHead()
        if method == "HEAD" || head.status == 204 || head.status == 304 {
            return TestResponse(head: head, body: [])
        }
        if let length = head.header("Content-Length").flatMap({ Int($0) }) {
            return TestResponse(head: head, body: try readBytes(length))
        }
        if head.header("Transfer-Encoding")?.lowercased() == "chunked" {
            var body: [UInt8] = []
            while let chunk = try readChunk() { body += chunk }
            return TestResponse(head: head, body: body)
        }
        while try fill() {}
        defer { buffer = [] }
        return TestResponse(head: head, body: buffer)
    }

    /// Whether the peer closed the connection (reads until EOF, error or timeout).
    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func waitForClose() -> Bool {
        while true {
            do {
                if try !fill() { return true }
            } catch {
                return errno == ECONNRESET
            }
        }
    }
}

extension RawConnection {
    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public static func get(_ target: String, port: Int, headers: String = "", host: String? = "127.0.0.1") throws
        -> TestResponse
    {
        let connection = try RawConnection(port: port)
        let hostLine = host.map { "Host: \($0)\r\n" } ?? ""
        try connection.send("GET \(target) HTTP/1.1\r\n\(hostLine)\(headers)Connection: close\r\n\r\n")
        return try connection.readResponse()
    }
}

extension RawConnection {
    /// One request on a fresh connection (`Connection: close`), with an optional body.
    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public static func request(
        _ method: String, _ target: String, port: Int, headers: [String: String] = [:], body: [UInt8]? = nil,
        host: String? = "127.0.0.1"
    ) throws -> TestResponse {
        let connection = try RawConnection(port: port, receiveTimeoutSeconds: 30)
        var head = "\(method) \(target) HTTP/1.1\r\n\(host.map { "Host: \($0)\r\n" } ?? "")Connection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        try connection.send(Array((head + "\r\n").utf8) + (body ?? []))
        return try connection.readResponse(method: method)
    }
}
