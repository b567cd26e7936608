import FuzzSupport
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// What must hold for any bytes sent to the gateway's port (through libmicrohttpd, the pipeline, the hot path and
/// the local deployment, all in this process): after the client has sent the bytes and shut down its sending side,
/// the gateway either closes the connection without a byte or sends a complete HTTP answer (status line, headers
/// ended, the body its `Content-Length` or chunked framing announces; an event stream counts once its headers are
/// in), within ``answerSeconds``. Silence is a hang, a cut answer or a 500 `InternalError` a failure.
///
/// An unfinished request (a request line or headers without their end, a body shorter than its length) ends at the
/// gateway's idle timeout, ``idleTimeoutSeconds`` here, even when the client has shut down its side:
/// libmicrohttpd 0.9.75 does not see an end of stream that arrives with the request's last bytes (one `recv` takes
/// both, and with edge-triggered epoll no later event comes), the same in a bare C libmicrohttpd server
/// (docs/testing.md, "Fuzzing"). The bound is that timeout plus a margin for a loaded, sanitized process.
enum HTTPProperties {
    static let idleTimeoutSeconds = 1
    static let answerSeconds = idleTimeoutSeconds + 4

    static func check(_ bytes: [UInt8]) {
        let port = InProcessGateway.port
        let received = exchange(bytes, port: port)
        switch received {
        case .silent(let partial):
            fail("no complete answer within \(answerSeconds) s to \(excerpt(bytes)); got \(excerpt(partial))")
        case .answer(let answer, let closed):
            if answer.isEmpty && closed { return }
            guard let response = ResponseReader.read(answer, requestMethod: firstMethod(bytes), closed: closed) else {
                fail("not an HTTP answer to \(excerpt(bytes)): \(excerpt(answer))")
            }
            require(response.isComplete, "a cut answer to \(excerpt(bytes)): \(excerpt(answer))")
            require(
                !(response.status == 500 && response.body.contains("\"InternalError\"")),
                "500 InternalError for \(excerpt(bytes)): \(excerpt(answer))")
        }
    }

    static func firstMethod(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix { $0 != UInt8(ascii: " ") }.prefix(16), as: UTF8.self)
    }

    enum Received {
        /// What arrived, and whether the gateway then closed the connection (otherwise the reader stopped at a
        /// complete answer).
        case answer([UInt8], closed: Bool)
        case silent([UInt8])
    }

    /// Sends `bytes`, shuts down the sending side, and reads until the gateway closes, the first answer is complete,
    /// or ``answerSeconds`` pass with no progress.
    static func exchange(_ bytes: [UInt8], port: Int) -> Received {
        let connection: RawConnection
        do {
            connection = try RawConnection(port: port, receiveTimeoutSeconds: answerSeconds)
        } catch {
            fail("no connection to the in-process gateway: \(error)")
        }
        defer { connection.close() }
        let fd = connection.fd
        // The gateway may answer and close before reading everything: a failed send is not a failure.
        try? connection.send(bytes)
        shutdown(fd, Int32(SHUT_WR))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                answer += buffer[..<n]
                if let response = ResponseReader.read(answer, requestMethod: firstMethod(bytes), closed: false),
                    response.isComplete
                {
                    return .answer(answer, closed: false)
                }
            } else if n == 0 || errno == ECONNRESET {
                return .answer(answer, closed: true)
            } else if errno == EINTR {
                continue
            } else {
                return .silent(answer)
            }
        }
    }
}

/// Reads the first HTTP/1.x response of a byte stream, enough to say whether it is complete.
struct ResponseReader {
    var status: Int
    var body: String
    var isComplete: Bool

    /// `closed`: the connection has ended after `bytes`.
    static func read(_ bytes: [UInt8], requestMethod: String, closed: Bool) -> ResponseReader? {
        let text = bytes
        guard let headerEnd = find([13, 10, 13, 10], in: text[...]) else {
            // Not even the headers: whatever arrived must at least begin like a status line.
            let prefix = Array("HTTP/1.".utf8)
            let n = min(prefix.count, text.count)
            return Array(text.prefix(n)) == Array(prefix.prefix(n))
                ? ResponseReader(status: 0, body: "", isComplete: false) : nil
        }
        let head = String(decoding: text[..<headerEnd], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1" || statusLine[0] == "HTTP/1.0",
            let status = Int(statusLine[1]), (100...599).contains(status)
        else { return nil }
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            fields[line[..<colon].lowercased()] =
                line[line.index(after: colon)...]
                .trimmingPrefix(" ").description
        }
        let body = Array(text[(headerEnd + 4)...])
        let bodyText = String(decoding: body.prefix(4096), as: UTF8.self)
        if requestMethod == "HEAD" || status == 204 || status == 304 || status < 200 {
            return ResponseReader(status: status, body: "", isComplete: true)
        }
        if status == 200, fields["content-type"]?.hasPrefix("text/event-stream") == true {
            return ResponseReader(status: status, body: bodyText, isComplete: true)
        }
        if let length = fields["content-length"].flatMap({ Int($0) }) {
            return ResponseReader(status: status, body: bodyText, isComplete: body.count >= length)
        }
        if fields["transfer-encoding"]?.lowercased() == "chunked" {
            return ResponseReader(status: status, body: bodyText, isComplete: chunkedIsComplete(body))
        }
        // Neither length nor chunks: the body ends with the connection.
        return ResponseReader(status: status, body: bodyText, isComplete: closed)
    }

    static func chunkedIsComplete(_ body: [UInt8]) -> Bool {
        var index = 0
        while true {
            guard index <= body.count, let lineEnd = find([13, 10], in: body[index...]) else { return false }
            let sizeText = String(decoding: body[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingPrefix(" "), radix: 16) else { return false }
            index = lineEnd + 2
            if size == 0 { return find([13, 10], in: body[index...]) != nil }
            index += size + 2
            if index > body.count { return false }
        }
    }

    static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        var index = haystack.startIndex
        while index + needle.count <= haystack.endIndex {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
