/// The state of one streaming response, without I/O: pending writes, the suspended flag and closing.
///
/// Owned by ``HTTPStreamWriter`` under its lock; the owner performs the returned actions
/// (`MHD_resume_connection`, `MHD_suspend_connection`) while still holding the lock, as the
/// suspend/resume pattern requires (the reader suspends under the lock, a writer resumes only
/// when this state says the connection is suspended).
struct StreamBuffer: Sendable {
    enum WriteAction: Equatable {
        /// Accepted; the connection is active and will read it.
        case accepted
        /// Accepted; the owner must call `MHD_resume_connection`.
        case acceptedResume
        /// Refused: the stream is finishing or closed.
        case rejected
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
    private(set) var pendingByteCount = 0
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

    var acceptsWrites: Bool { !isFinishing && closeReason == nil && !clientGone }

    mutating func write(_ bytes: [UInt8]) -> WriteAction {
        guard acceptsWrites else { return .rejected }
        if !bytes.isEmpty {
            messages.append(bytes)
            pendingByteCount += bytes.count
        }
        return takeResume()
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
            pendingByteCount -= dropped
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
        pendingByteCount = 0
        return takeResume()
    }

    /// Called by libmicrohttpd's content reader on the connection's thread.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadAction {
        if clientGone { return .abort }
        if pendingByteCount == 0 {
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
        pendingByteCount -= written
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
        pendingByteCount = 0
        return true
    }

    private mutating func takeResume() -> WriteAction {
        if isSuspended {
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
