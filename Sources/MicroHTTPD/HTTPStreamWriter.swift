import CMicroHTTPD
import CMicroHTTPDShim
import Glibc
import Synchronization

/// Why a streaming response ended.
public enum HTTPStreamCloseReason: Sendable, Hashable {
    /// ``HTTPStreamWriter/finish()`` was called and the terminating chunk went out.
    case finished
    /// The client went away: it closed the connection (noticed at once, even while the stream is
    /// idle), or a write or read failed.
    case clientDisconnected
    /// The connection was idle for longer than ``HTTPServerConfiguration/idleTimeoutSeconds``
    /// while not suspended (e.g. a client that stopped reading).
    case timedOut
    /// The server shut down: either the stream was ended cleanly by ``HTTPServer/shutdown()``
    /// (terminating chunk sent) or the connection was closed when the daemon stopped.
    case serverShutdown
}

/// The writing end of a streaming (chunked, unknown-length) response, e.g. Server-Sent Events.
///
/// Every method may be called from any thread or task and never blocks on the network:
/// writes are queued in memory and handed to libmicrohttpd by its content reader. While
/// nothing is pending the connection is suspended, so an idle stream costs no CPU; a write
/// resumes it. Bound the memory per stream yourself with ``pendingByteCount`` and
/// ``replacePending(with:)`` (coalescing to the latest state).
public final class HTTPStreamWriter: Sendable {
    private let connection: ConnectionHandle
    private let state = Mutex(StreamBuffer())
    private let closeHandlers = Mutex(CloseHandlers())
    /// Number of content-reader calls (tests use it to check that idle streams are not polled).
    let readerCalls = Atomic<Int>(0)

    private struct CloseHandlers: ~Copyable {
        var reason: HTTPStreamCloseReason?
        var handlers: [@Sendable (HTTPStreamCloseReason) -> Void] = []
        var waiters: [CheckedContinuation<HTTPStreamCloseReason, Never>] = []
    }

    init(connection: ConnectionHandle) {
        self.connection = connection
    }

    /// Queues `bytes` for sending.
    /// - Returns: `false` if the stream was finished or closed (the bytes are dropped).
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        perform(bytes) { $0.write(bytes) }
    }

    /// Queues the UTF-8 bytes of `string`.
    /// - Returns: `false` if the stream was finished or closed.
    @discardableResult
    public func write(_ string: String) -> Bool {
        write(Array(string.utf8))
    }

    /// Queues `bytes`, or, when at least `limit` bytes wait already, replaces every queued write that has not started
    /// to go out with them (as ``replacePending(with:)``), in one step.
    /// - Returns: `false` if the stream was finished or closed.
    @discardableResult
    public func write(_ bytes: [UInt8], coalescingAt limit: Int) -> Bool {
        perform(bytes) { $0.write(bytes, coalescingAt: limit) }
    }

    /// Drops every queued write that has not started to go out, then queues `bytes`: the way to
    /// coalesce a slow reader to the latest state. A write already partly sent is kept whole.
    /// - Returns: `false` if the stream was finished or closed.
    @discardableResult
    public func replacePending(with bytes: [UInt8]) -> Bool {
        perform(bytes) { $0.replacePending(with: bytes).action }
    }

    /// Bytes queued but not yet handed to libmicrohttpd.
    public var pendingByteCount: Int {
        state.withLock { $0.pendingByteCount }
    }

    /// Whether the connection is suspended with nothing left to send (tests wait for it).
    var suspendedIdle: Bool {
        state.withLock { $0.isSuspended && $0.pendingByteCount == 0 }
    }

    /// Whether writes are refused (after ``end()`` or once the request is over).
    public var isClosed: Bool {
        state.withLock { !$0.acceptsWrites }
    }

    /// Ends the stream after the queued bytes: libmicrohttpd sends the terminating chunk. Idempotent.
    public func end() {
        _ = perform { $0.finish() }
    }

    /// Calls `handler` once when the request is over (on a libmicrohttpd thread: do not block),
    /// or immediately if it already is.
    public func onClose(_ handler: @escaping @Sendable (HTTPStreamCloseReason) -> Void) {
        let already: HTTPStreamCloseReason? = closeHandlers.withLock { handlers in
            if let reason = handlers.reason { return reason }
            handlers.handlers.append(handler)
            return nil
        }
        if let already { handler(already) }
    }

    /// Waits until the request is over and returns why. (Not cancellable: every stream ends at the
    /// latest when the server shuts down.)
    public func closed() async -> HTTPStreamCloseReason {
        await withCheckedContinuation { continuation in
            let already: HTTPStreamCloseReason? = closeHandlers.withLock { handlers in
                if let reason = handlers.reason { return reason }
                handlers.waiters.append(continuation)
                return nil
            }
            if let already { continuation.resume(returning: already) }
        }
    }

    private func perform(_ bytes: [UInt8] = [], _ body: (inout StreamBuffer) -> StreamBuffer.WriteAction) -> Bool {
        state.withLock { buffer in
            var action = body(&buffer)
            if case .sendDirectly = action {
                var chunkLength = 0
                let sent = bytes.withUnsafeBufferPointer { bytes in
                    cmhd_send_chunk(buffer.directSocket, bytes.baseAddress, bytes.count, &chunkLength)
                }
                action = buffer.sentDirectly(bytes, sent: sent, of: chunkLength)
            }
            return carryOut(action)
        }
    }

    /// Carries out `action` under the stream's lock.
    private func carryOut(_ action: StreamBuffer.WriteAction) -> Bool {
        switch action {
        case .accepted:
            return true
        case .acceptedResume:
            // Only here, under the stream lock and after our flag said "suspended".
            MHD_resume_connection(connection.raw)
            return true
        case .rejected, .sendDirectly:
            return false
        }
    }

    // MARK: Called by the server

    /// Lets writes go straight to the connection's socket while it is suspended (``StreamBuffer``): `socket` carries
    /// an HTTP/1.1 chunked body and the hang-up watcher reports when it is writable (``socketWritable()``). Call
    /// before the response is queued.
    func allowDirectWrites(socket: Int32) {
        state.withLock { $0.directSocket = socket }
    }

    /// The socket can take more (hang-up watcher's thread): sends the rest of a chunk it took only in part.
    func socketWritable() {
        state.withLock { buffer in
            guard let remainder = buffer.remainderToSend else { return }
            let sent = remainder.withUnsafeBufferPointer { bytes in
                cmhd_send_some(buffer.directSocket, bytes.baseAddress, bytes.count)
            }
            _ = carryOut(buffer.remainderSent(sent))
        }
    }

    /// Content reader body (libmicrohttpd thread of this connection).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        readerCalls.add(1, ordering: .relaxed)
        return state.withLock { stream in
            switch stream.read(into: buffer) {
            case .bytes(let count):
                return count
            case .endOfStream:
                return Int(MHD_CONTENT_READER_END_OF_STREAM)
            case .suspend:
                // Check-and-suspend under the lock: a concurrent write sees the flag and resumes.
                MHD_suspend_connection(connection.raw)
                return 0
            case .abort:
                return Int(MHD_CONTENT_READER_END_WITH_ERROR)
            }
        }
    }

    /// The client hung up (hang-up watcher's thread): the next read ends the response.
    func peerHungUp() {
        _ = perform { $0.peerHungUp() }
    }

    /// Ends the stream because the server is shutting down.
    func finishForShutdown() {
        _ = perform { $0.finish(byShutdown: true) }
    }

    /// The request is over (completion callback, libmicrohttpd thread).
    func requestEnded(_ reason: HTTPStreamCloseReason) {
        let finalReason: HTTPStreamCloseReason? = state.withLock { stream in
            stream.close(reason) ? stream.closeReason : nil
        }
        guard let finalReason else { return }
        let (handlers, waiters) = closeHandlers.withLock { handlers in
            handlers.reason = finalReason
            defer {
                handlers.handlers = []
                handlers.waiters = []
            }
            return (handlers.handlers, handlers.waiters)
        }
        for handler in handlers { handler(finalReason) }
        for waiter in waiters { waiter.resume(returning: finalReason) }
    }
}
