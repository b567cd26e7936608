import CMicroHTTPD
import CMicroHTTPDShim

#if canImport(Glibc)
    import Glibc
#endif

/// Keeps slow and greedy clients from holding the server: the first request's head within
/// ``HTTPServerConfiguration/headerTimeout``, each body at ``HTTPServerConfiguration/minimumBodyRate`` at least, and
/// each client address within ``HTTPServerConfiguration/maxConnectionsPerAddress``. Made only when one of them (or
/// ``HTTPServerConfiguration/maxBodyBytesPerAddress``, which needs the address of each connection) is configured.
///
/// libmicrohttpd 0.9.75 has no deadline for a whole request (its idle timeout restarts with every byte), and it lets
/// no response be queued before a request's head has been read, or from outside the access handler while a body
/// arrives. So the guard answers on the socket itself: it writes a complete HTTP/1.1 response (its status, the body of
/// ``HTTPServerConfiguration/rejectionResponse``, `Connection: close`) without blocking, then shuts the socket down
/// both ways. libmicrohttpd then reads the end of the stream and closes the connection itself, with its usual
/// callbacks: a body's bytes go back to ``BodyBudget`` in its request's completion, and the connection count drops in
/// the connection-closed notification. The guard never closes a socket libmicrohttpd owns, and touches one only under
/// the connection's ``ConnectionDeadline`` lock while that says it is open: the connection-closed notification, which
/// libmicrohttpd sends before it closes the socket, marks it closed under the same lock.
///
/// Deadlines are checked by one thread of the guard's own every ``periodMilliseconds``, never on the concurrency pool;
/// it looks only at connections that have one running (awaiting their first head, or receiving a body).
final class ConnectionGuard: Sendable {
    static let periodMilliseconds: Int32 = 500

    /// The C ticker; its calls may come from any thread.
    private struct Handle: @unchecked Sendable {
        let raw: OpaquePointer
    }

    private let headerTimeout: Duration?
    private let minimumBodyRate: ConnectionDeadline.MinimumRate?
    /// Whether connections are keyed by their client address (a per-address share is configured).
    private let keysAddresses: Bool
    /// Whether connections get a ``ConnectionDeadline``: something may refuse them.
    private let refusesConnections: Bool
    private let shares: POSIXLocked<AddressShares>?
    /// The connections whose deadline runs. Behind a POSIX mutex: the guard's thread reads contexts from here that
    /// libmicrohttpd's threads made (``POSIXLocked``).
    private let timed = POSIXLocked<[ObjectIdentifier: ConnectionContext]>([:])
    private let ticker = POSIXLocked<Handle?>(nil)
    /// The time the deadlines are kept in: a `Duration` since any fixed origin.
    private let now: @Sendable () -> Duration
    /// The response of each answer the guard writes itself.
    private let rejectionResponse: @Sendable (HTTPServerRejection) -> HTTPResponse

    /// A guard for `configuration`, or `nil` when it asks for none.
    /// - Parameter now: the clock of the deadlines (tests move their own).
    convenience init?(configuration: HTTPServerConfiguration, now: (@Sendable () -> Duration)? = nil) {
        let c = configuration
        guard
            c.headerTimeout != nil || c.minimumBodyRate != nil || c.maxConnectionsPerAddress != nil
                || c.maxBodyBytesPerAddress != nil
        else { return nil }
        self.init(
            headerTimeout: c.headerTimeout,
            minimumBodyRate: c.minimumBodyRate.map { ConnectionDeadline.MinimumRate(bytes: $0.bytes, per: $0.per) },
            maxConnectionsPerAddress: c.maxConnectionsPerAddress,
            keysAddresses: c.maxConnectionsPerAddress != nil || c.maxBodyBytesPerAddress != nil,
            rejectionResponse: c.rejectionResponse,
            now: now ?? Self.continuousNow()
        )
    }

    init(
        headerTimeout: Duration?, minimumBodyRate: ConnectionDeadline.MinimumRate?, maxConnectionsPerAddress: Int?,
        keysAddresses: Bool, rejectionResponse: @escaping @Sendable (HTTPServerRejection) -> HTTPResponse,
        now: @escaping @Sendable () -> Duration
    ) {
        self.headerTimeout = headerTimeout
        self.minimumBodyRate = minimumBodyRate
        self.keysAddresses = keysAddresses
        refusesConnections = headerTimeout != nil || minimumBodyRate != nil || maxConnectionsPerAddress != nil
        shares = maxConnectionsPerAddress.map { POSIXLocked(AddressShares(limit: $0)) }
        self.rejectionResponse = rejectionResponse
        self.now = now
    }

    /// Time since the guard was made, on the continuous clock.
    private static func continuousNow() -> @Sendable () -> Duration {
        let origin = ContinuousClock.now
        return { ContinuousClock.now - origin }
    }

    // MARK: Lifecycle

    /// Starts the thread that checks deadlines, when there are deadlines to check; `false` if the system refused.
    func start() -> Bool {
        guard headerTimeout != nil || minimumBodyRate != nil else { return true }
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let raw = cmhd_ticker_start(Self.periodMilliseconds, connectionGuardTickThunk, context) else {
            return false
        }
        ticker.withLock { $0 = Handle(raw: raw) }
        return true
    }

    /// Stops the thread (joining it), off the concurrency pool; does nothing if it is not running.
    @available(*, noasync)
    func stop() {
        let running = ticker.withLock { ticker -> Handle? in
            defer { ticker = nil }
            return ticker
        }
        if let running { cmhd_ticker_stop(running.raw) }
    }

    /// Connections whose deadline runs now (tests read it).
    var timedConnectionCount: Int {
        timed.withLock { $0.count }
    }

    // MARK: Connection events (libmicrohttpd thread of the connection)

    /// The connection-started notification: the context of a client's new connection. One over its address's share
    /// is answered with ``HTTPServerRejection/tooManyConnectionsFromAddress`` and shut down at once.
    func accepted(_ connection: OpaquePointer) -> ConnectionContext {
        let address = keysAddresses ? cmhd_connection_client_address(connection).flatMap(ClientAddressKey.init) : nil
        return accepted(socket: cmhd_connection_fd(connection), address: address)
    }

    /// ``accepted(_:)`` once the socket and the address are read.
    func accepted(socket: Int32, address: ClientAddressKey?) -> ConnectionContext {
        let counted = shares.flatMap { shares in address.map { key in shares.withLock { $0.opened(key) } } }
        let deadline = refusesConnections ? POSIXLocked(ConnectionDeadline()) : nil
        let context = ConnectionContext(
            addressKey: address, socket: socket, countsForAddress: counted == true, deadline: deadline)
        if counted == false {
            deadline?.withLock { $0.refusedAtAccept() }
            answer(.tooManyConnectionsFromAddress, on: socket)
        } else if let headerTimeout, let deadline {
            let now = now()
            deadline.withLock { $0.accepted(now: now, headerTimeout: headerTimeout) }
            watch(context)
        }
        return context
    }

    /// A request's head arrived (its first access-handler call). Returns whether to serve it: `false` when the server
    /// has refused the connection itself, and libmicrohttpd is to close it.
    func headersArrived(_ context: ConnectionContext) -> Bool {
        ending(context) { $0.headersArrived() } ?? true
    }

    /// Whether bodies are timed (``HTTPServerConfiguration/minimumBodyRate``).
    var timesBodies: Bool { minimumBodyRate != nil }

    /// A request's body starts arriving (its first call).
    func bodyStarted(_ context: ConnectionContext) {
        guard let minimumBodyRate, let deadline = context.deadline else { return }
        let now = now()
        deadline.withLock { $0.bodyStarted(now: now, rate: minimumBodyRate) }
        watch(context)
    }

    /// `count` more bytes of a body arrived.
    func bodyReceived(_ context: ConnectionContext, count: Int) {
        guard minimumBodyRate != nil, let deadline = context.deadline else { return }
        deadline.withLock { $0.bodyReceived(count) }
    }

    /// A whole body arrived. Returns whether to serve its request: `false` when the server has refused the connection.
    func bodyEnded(_ context: ConnectionContext) -> Bool {
        ending(context) { $0.bodyEnded() } ?? true
    }

    /// The connection-closed notification, before libmicrohttpd closes the socket.
    func closed(_ context: ConnectionContext) {
        ending(context) { $0.closed() }
        if context.countsForAddress, let address = context.addressKey {
            shares?.withLock { $0.closed(address) }
        }
    }

    /// Moves the connection's deadline by `event`, which ends its timing, and takes the connection out of the watched
    /// set if it was in it. Returns what `event` returns; `nil` when the connection has no deadline.
    @discardableResult
    private func ending<Result>(
        _ context: ConnectionContext, _ event: (inout ConnectionDeadline) -> Result
    ) -> Result? {
        guard let deadline = context.deadline else { return nil }
        let (result, wasTimed) = deadline.withLock { deadline in
            let wasTimed = deadline.isTimed
            return (event(&deadline), wasTimed)
        }
        if wasTimed { unwatch(context) }
        return result
    }

    private func watch(_ context: ConnectionContext) {
        timed.withLock { $0[ObjectIdentifier(context)] = context }
    }

    private func unwatch(_ context: ConnectionContext) {
        timed.withLock { $0[ObjectIdentifier(context)] = nil }
    }

    // MARK: The guard's thread

    /// Refuses every connection whose deadline has passed: a 408 on its socket, then the socket shut down.
    func tick() {
        let contexts = timed.withLock { Array($0.values) }
        guard !contexts.isEmpty else { return }
        let now = now()
        let late = contexts.filter { context in
            context.deadline?.withLock { $0.tick(now: now) } == .refuse
        }
        guard !late.isEmpty else { return }
        let bytes = Self.bytes(of: rejectionResponse(.requestTimeout))
        for context in late {
            unwatch(context)
            // Under the lock, and only while libmicrohttpd has not closed the connection (the socket is still its).
            context.deadline?.withLock { deadline in
                if case .refused = deadline.phase { Self.send(bytes, thenShutDown: context.socket) }
            }
        }
    }

    // MARK: Answers written on the socket

    /// Writes `rejection`'s response on `socket` and shuts the socket down.
    private func answer(_ rejection: HTTPServerRejection, on socket: Int32) {
        Self.send(Self.bytes(of: rejectionResponse(rejection)), thenShutDown: socket)
    }

    /// Sends what the socket takes at once (a fresh or reading connection has room for a short answer), then shuts it
    /// down both ways: libmicrohttpd reads the end of the stream and closes the connection.
    static func send(_ bytes: [UInt8], thenShutDown socket: Int32) {
        guard socket >= 0 else { return }
        _ = bytes.withUnsafeBufferPointer { cmhd_send_some(socket, $0.baseAddress, $0.count) }
        _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
    }

    /// `response` as HTTP/1.1 bytes: its status line, its header fields but its own `Connection` and
    /// `Content-Length`, then `Connection: close`, the length, and the body.
    static func bytes(of response: HTTPResponse) -> [UInt8] {
        var status = response.status
        if !(100...999).contains(status) { status = 500 }
        let reason = MHD_get_reason_phrase_for(UInt32(status)).map { String(cString: $0) } ?? ""
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        for field in response.headers {
            let name = field.name.lowercased()
            if name == "connection" || name == "content-length" || name == "transfer-encoding" { continue }
            // A field that would break the head is left out (libmicrohttpd refuses them in responses it queues).
            if (field.name + field.value).utf8.contains(where: { $0 == 13 || $0 == 10 }) { continue }
            head += "\(field.name): \(field.value)\r\n"
        }
        head += "Connection: close\r\nContent-Length: \(response.body.count)\r\n\r\n"
        return Array(head.utf8) + response.body
    }
}

private let connectionGuardTickThunk: cmhd_tick_function = { context in
    guard let context else { return }
    Unmanaged<ConnectionGuard>.fromOpaque(context).takeUnretainedValue().tick()
}
