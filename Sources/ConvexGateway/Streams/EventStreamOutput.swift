import MicroHTTPD
import Synchronization

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
    /// Writes a heartbeat comment, unless the client is still behind.
    func heartbeat(_ comment: [UInt8])
    /// Events queued so far, heartbeats left out (for the access log's line at the stream's end).
    var eventsWritten: Int { get }
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

    /// Not counted by an output that does not say.
    var eventsWritten: Int { 0 }
}

/// A stream's output on a libmicrohttpd stream writer.
final class HTTPEventStreamOutput: EventStreamOutput {
    let writer: HTTPStreamWriter
    private let events = Atomic<Int>(0)

    init(writer: HTTPStreamWriter) { self.writer = writer }

    func write(_ bytes: [UInt8]) {
        events.wrappingAdd(1, ordering: .relaxed)
        _ = writer.write(bytes)
    }
    var pendingByteCount: Int { writer.pendingByteCount }
    func replacePending(with bytes: [UInt8]) {
        events.wrappingAdd(1, ordering: .relaxed)
        _ = writer.replacePending(with: bytes)
    }
    func write(_ bytes: [UInt8], coalescingAt limit: Int) {
        events.wrappingAdd(1, ordering: .relaxed)
        _ = writer.write(bytes, coalescingAt: limit)
    }
    func end() { writer.end() }
    func heartbeat(_ comment: [UInt8]) {
        if pendingByteCount == 0 { _ = writer.write(comment) }
    }
    var eventsWritten: Int { events.load(ordering: .relaxed) }
}
