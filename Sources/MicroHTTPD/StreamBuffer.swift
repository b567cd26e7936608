import CMicroHTTPDShim
import Glibc

/// The state of one streaming response, without I/O: pending writes, the suspended flag and closing.
///
/// Owned by ``HTTPStreamWriter`` under its lock; the owner performs the returned actions
/// (`MHD_resume_connection`, `MHD_suspend_connection`, a send to the socket) while still holding the lock, as the
/// suspend/resume pattern requires (the reader suspends under the lock, a writer resumes only
/// when this state says the connection is suspended).
///
/// **Direct writes.** While the connection is suspended libmicrohttpd has sent everything it had (it asks the reader
/// for more only once its buffer is out) and does not touch the socket. A write that finds the stream suspended with
/// nothing queued is then sent by the writer itself, as one HTTP/1.1 chunk, without resuming the connection: one
/// `sendmsg` instead of a resume, a wake-up of libmicrohttpd's thread, a read and a send. If the socket takes only
/// part of the chunk, the rest (``remainder``) must follow before anything libmicrohttpd frames: the connection stays
/// suspended, further writes queue, and the rest goes out when the socket is writable again
/// (``remainderToSend``, ``remainderSent(_:)``); then libmicrohttpd takes over what queued meanwhile.
struct StreamBuffer: Sendable {
    enum WriteAction: Equatable {
        /// Accepted; the connection is active and will read it.
        case accepted
        /// Accepted; the owner must call `MHD_resume_connection`.
        case acceptedResume
        /// Refused: the stream is finishing or closed.
        case rejected
        /// Not queued: the connection is suspended with nothing pending and writes may go to its socket, so the owner
        /// sends the bytes as one chunk itself, then reports with ``sentDirectly(_:sent:of:)``.
        case sendDirectly
    }

    enum ReadAction: Equatable {
        /// `count` bytes were copied into the buffer.
        case bytes(Int)
        /// Everything was sent and the stream was finished: end the response.
        case endOfStream
        /// Nothing to send: the owner must call `MHD_suspend_connection` and return 0.
        case suspend
        /// The client is gone: end the response with an error so that libmicrohttpd closes the connection.
        case abort
    }

    private var messages: [[UInt8]] = []
    private var head = 0
    private var headOffset = 0
    /// Bytes of `messages` not yet handed to libmicrohttpd.
    private var queuedByteCount = 0
    /// The part of a directly sent chunk the socket has not taken yet (see the type's comment).
    private var remainder: [UInt8] = []
    /// Whether this state believes the connection is suspended (set by `read`, cleared by the resuming call).
    private(set) var isSuspended = false
    /// `finish()` was called: no more writes; end the response once the pending bytes are sent.
    private(set) var isFinishing = false
    /// Set once the request is over (the connection must not be touched any more).
    private(set) var closeReason: HTTPStreamCloseReason?
    /// The stream was ended by server shutdown (reported as ``HTTPStreamCloseReason/serverShutdown``).
    private(set) var endedByShutdown = false
    /// The client hung up: nothing more is sent, and the next read ends the response.
    private(set) var clientGone = false
    /// The connection's socket when writes may go to it while the connection is suspended (an HTTP/1.1 chunked
    /// stream whose socket is watched for writability), or -1.
    var directSocket: Int32 = -1

    var acceptsWrites: Bool { !isFinishing && closeReason == nil && !clientGone }

    /// Bytes written but not yet sent, the rest of a directly sent chunk included.
    var pendingByteCount: Int { queuedByteCount + remainder.count }

    mutating func write(_ bytes: [UInt8]) -> WriteAction {
        guard acceptsWrites else { return .rejected }
        if !bytes.isEmpty && directSocket >= 0 && isSuspended && queuedByteCount == 0 && remainder.isEmpty {
            return .sendDirectly
        }
        return queue(bytes)
    }

    /// Queues `bytes` for libmicrohttpd's reader, resuming the connection if it is suspended.
    private mutating func queue(_ bytes: [UInt8]) -> WriteAction {
        if !bytes.isEmpty {
            messages.append(bytes)
            queuedByteCount += bytes.count
        }
        return takeResume()
    }

    /// Whether a send's result (`-errno`) means only that the socket took nothing now.
    private static func tookNothingForNow(_ sent: Int) -> Bool {
        sent == -Int(EAGAIN) || sent == -Int(EWOULDBLOCK) || sent == -Int(EINTR)
    }

    /// What came of sending `bytes` as one chunk of `chunkLength` bytes to the socket: `sent` of them, or `-errno`.
    mutating func sentDirectly(_ bytes: [UInt8], sent: Int, of chunkLength: Int) -> WriteAction {
        if sent == chunkLength { return .accepted }
        if sent > 0 {
            remainder = Array(StreamBuffer.chunk(bytes)[sent...])
            return .accepted
        }
        if sent == 0 || Self.tookNothingForNow(sent) {
            return queue(bytes)  // nothing went out: libmicrohttpd sends it once the socket takes more
        }
        return peerHungUp()  // the socket failed: the client is gone
    }

    /// The rest of a directly sent chunk, when there is one to send now.
    var remainderToSend: [UInt8]? {
        remainder.isEmpty || closeReason != nil || clientGone || directSocket < 0 ? nil : remainder
    }

    /// What came of sending ``remainderToSend``: `sent` bytes of it, or `-errno`. Once it is all out, libmicrohttpd
    /// takes over what queued meanwhile (or ends the stream).
    mutating func remainderSent(_ sent: Int) -> WriteAction {
        if sent >= 0 {
            remainder.removeFirst(min(sent, remainder.count))
            guard remainder.isEmpty else { return .accepted }
            return queuedByteCount > 0 || isFinishing ? takeResume() : .accepted
        }
        return Self.tookNothingForNow(sent) ? .accepted : peerHungUp()
    }

    /// `bytes` framed as one HTTP/1.1 chunk, as `cmhd_send_chunk` sends them (the same head, `cmhd_chunk_head`).
    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        var head = [UInt8](repeating: 0, count: Int(CMHD_CHUNK_HEAD_CAPACITY))
        let headLength = head.withUnsafeMutableBufferPointer { cmhd_chunk_head(bytes.count, $0.baseAddress) }
        return head[..<headLength] + bytes + [13, 10]
    }

    /// Queues `bytes`, or, when at least `limit` bytes are already pending, replaces the pending writes with them
    /// (``replacePending(with:)``): one step for a writer that coalesces a slow reader.
    mutating func write(_ bytes: [UInt8], coalescingAt limit: Int) -> WriteAction {
        pendingByteCount >= limit ? replacePending(with: bytes).action : write(bytes)
    }

    /// Drops every pending write that has not started to go out, then queues `bytes`.
    /// A write already partly handed to libmicrohttpd is kept whole so the stream stays well-formed.
    mutating func replacePending(with bytes: [UInt8]) -> (action: WriteAction, droppedBytes: Int) {
        guard acceptsWrites else { return (.rejected, 0) }
        let keepFrom = headOffset > 0 ? head + 1 : head
        var dropped = 0
        if keepFrom < messages.count {
            for index in keepFrom..<messages.count { dropped += messages[index].count }
            messages.removeSubrange(keepFrom...)
            queuedByteCount -= dropped
        }
        return (write(bytes), dropped)
    }

    /// Marks the stream finished; the response ends after the pending bytes.
    mutating func finish(byShutdown: Bool = false) -> WriteAction {
        guard closeReason == nil else { return .rejected }
        if byShutdown { endedByShutdown = true }
        if isFinishing { return .rejected }
        isFinishing = true
        return takeResume()
    }

    /// The client hung up: drop what is queued and have the connection resumed if it is suspended, so that its next
    /// read ends it.
    mutating func peerHungUp() -> WriteAction {
        guard closeReason == nil, !clientGone else { return .rejected }
        clientGone = true
        messages = []
        head = 0
        headOffset = 0
        queuedByteCount = 0
        remainder = []
        return takeResume()
    }

    /// Called by libmicrohttpd's content reader on the connection's thread.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadAction {
        if clientGone { return .abort }
        if queuedByteCount == 0 {
            if isFinishing || closeReason != nil { return .endOfStream }
            isSuspended = true
            return .suspend
        }
        var written = 0
        while written < buffer.count && head < messages.count {
            let count = min(messages[head].count - headOffset, buffer.count - written)
            messages[head].withUnsafeBytes { source in
                buffer.baseAddress!.advanced(by: written).copyMemory(
                    from: source.baseAddress!.advanced(by: headOffset),
                    byteCount: count
                )
            }
            written += count
            headOffset += count
            if headOffset == messages[head].count {
                head += 1
                headOffset = 0
            }
        }
        queuedByteCount -= written
        compact()
        return .bytes(written)
    }

    /// The request is over; returns `false` if it already was.
    mutating func close(_ reason: HTTPStreamCloseReason) -> Bool {
        guard closeReason == nil else { return false }
        closeReason = endedByShutdown && reason == .finished ? .serverShutdown : reason
        isSuspended = false
        messages = []
        head = 0
        headOffset = 0
        queuedByteCount = 0
        remainder = []
        return true
    }

    private mutating func takeResume() -> WriteAction {
        // Not while the rest of a chunk waits: libmicrohttpd's next bytes would land inside it.
        if isSuspended && remainder.isEmpty {
            isSuspended = false
            return .acceptedResume
        }
        return .accepted
    }

    private mutating func compact() {
        if head == messages.count {
            messages.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= messages.count {
            messages.removeSubrange(..<head)
            head = 0
        }
    }
}
