import CMicroHTTPDShim

/// Notices at once when the client of a waiting request or an idle stream goes away.
///
/// libmicrohttpd does not watch a suspended connection, so without this a closed tab or a dropped network would be
/// seen only at the stream's next write. Every request that may wait (it is parked with the server) has its socket
/// in one epoll set for `EPOLLRDHUP`, served by one thread; a hang-up resumes the connection so that libmicrohttpd
/// closes it, and the request ends as ``HTTPStreamCloseReason/clientDisconnected``.
///
/// A client that half-closes its sending side after the request (`shutdown(SHUT_WR)`) counts as gone, as it does for
/// Go's and Node's servers.
final class HangUpWatcher: Sendable {
    /// The C watcher; its calls may come from any thread.
    private struct Handle: @unchecked Sendable {
        let raw: OpaquePointer
    }

    private struct Watched: ~Copyable {
        var handle: Handle?
        var nextToken: UInt64 = 1
        var exchanges: [UInt64: Exchange] = [:]
        /// The streams whose sockets are also watched for writability (direct writes, ``StreamBuffer``).
        var writers: [UInt64: HTTPStreamWriter] = [:]
    }

    /// Behind a POSIX mutex rather than a `Mutex`: the watcher's thread takes writers from here that pool threads
    /// made, and ThreadSanitizer sees that hand-over only through a lock it intercepts (``POSIXLocked``).
    private let watched = POSIXLocked(Watched())

    /// Starts the watcher's thread; `false` if the system refused (the server then serves without it).
    func start() -> Bool {
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let raw = cmhd_hangup_watcher_start(hangUpThunk, context) else { return false }
        let handle = Handle(raw: raw)
        watched.withLock { $0.handle = handle }
        return true
    }

    /// Stops the thread (joining it) and forgets every watch. Call once no connection is left, off the concurrency pool.
    @available(*, noasync)
    func stop() {
        let handle = watched.withLock { watched -> Handle? in
            defer {
                watched.handle = nil
                watched.exchanges = [:]
                watched.writers = [:]
            }
            return watched.handle
        }
        if let handle { cmhd_hangup_watcher_stop(handle.raw) }
    }

    /// Watches the socket of `exchange` (libmicrohttpd thread of its connection).
    /// - Returns: the token to pass to ``unwatch(_:)``, or `nil` if it is not watched.
    func watch(_ exchange: Exchange) -> Watch? {
        let fd = cmhd_connection_fd(exchange.connection.raw)
        guard fd >= 0 else { return nil }
        return watched.withLock { watched -> Watch? in
            guard let raw = watched.handle?.raw else { return nil }
            let token = watched.nextToken
            watched.nextToken += 1
            guard cmhd_hangup_watcher_add(raw, fd, token) == 0 else { return nil }
            watched.exchanges[token] = exchange
            return Watch(token: token, fd: fd)
        }
    }

    /// Also tells `writer` when the watched socket can take more (``HTTPStreamWriter/socketWritable()``).
    /// - Returns: `false` if it cannot.
    func watchWritable(_ watch: Watch, for writer: HTTPStreamWriter) -> Bool {
        watched.withLock { watched -> Bool in
            guard let raw = watched.handle?.raw, watched.exchanges[watch.token] != nil else { return false }
            watched.writers[watch.token] = writer
            guard cmhd_hangup_watcher_watch_writable(raw, watch.fd, watch.token) == 0 else {
                watched.writers[watch.token] = nil
                return false
            }
            return true
        }
    }

    /// Stops watching (the request is over; its socket is still open).
    func unwatch(_ watch: Watch) {
        watched.withLock { watched in
            watched.exchanges[watch.token] = nil
            watched.writers[watch.token] = nil
            if let raw = watched.handle?.raw { cmhd_hangup_watcher_remove(raw, watch.fd) }
        }
    }

    /// The watcher's thread: the peer behind `token` hung up.
    fileprivate func hungUp(_ token: UInt64) {
        let exchange = watched.withLock { watched -> Exchange? in
            watched.writers[token] = nil
            return watched.exchanges.removeValue(forKey: token)
        }
        exchange?.peerHungUp()
    }

    /// The watcher's thread: the socket behind `token` can take more.
    fileprivate func writable(_ token: UInt64) {
        let writer = watched.withLock { $0.writers[token] }
        writer?.socketWritable()
    }

    struct Watch: Sendable {
        let token: UInt64
        let fd: Int32
    }
}

private let hangUpThunk: cmhd_hangup_function = { context, token, hungUp in
    guard let context else { return }
    let watcher = Unmanaged<HangUpWatcher>.fromOpaque(context).takeUnretainedValue()
    if hungUp != 0 { watcher.hungUp(token) } else { watcher.writable(token) }
}
