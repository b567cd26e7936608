import MicroHTTPD

/// The byte-level end of one Server-Sent Event stream: what a stream writes its events to. Never blocks.
package protocol EventStreamOutput: AnyObject, Sendable {
    /// Queues bytes for the client.
    func write(_ bytes: [UInt8])
    /// Bytes queued but not yet sent: how far the client is behind.
    var pendingByteCount: Int { get }
    /// Drops what is queued and not yet being sent, then queues `bytes` (coalescing a slow reader).
    func replacePending(with bytes: [UInt8])
    /// Queues `bytes`, or ``replacePending(with:)`` when at least `limit` bytes wait already: one step.
    func write(_ bytes: [UInt8], coalescingAt limit: Int)
    /// Ends the stream after what is queued.
    func end()
}

extension EventStreamOutput {
    /// Two steps; an output whose queue has its own lock does it in one.
    func write(_ bytes: [UInt8], coalescingAt limit: Int) {
        if pendingByteCount < limit { write(bytes) } else { replacePending(with: bytes) }
    }

    /// Writes a heartbeat comment, unless the client is still behind (then the queued bytes will show it is alive).
    func heartbeat(_ comment: [UInt8]) {
        if pendingByteCount == 0 { write(comment) }
    }
}

/// A stream's output on a libmicrohttpd stream writer.
final class HTTPEventStreamOutput: EventStreamOutput {
    let writer: HTTPStreamWriter

    init(writer: HTTPStreamWriter) { self.writer = writer }

    func write(_ bytes: [UInt8]) { _ = writer.write(bytes) }
    var pendingByteCount: Int { writer.pendingByteCount }
    func replacePending(with bytes: [UInt8]) { _ = writer.replacePending(with: bytes) }
    func write(_ bytes: [UInt8], coalescingAt limit: Int) { _ = writer.write(bytes, coalescingAt: limit) }
    func end() { writer.end() }
}
