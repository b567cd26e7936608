import CMicroHTTPD
import CMicroHTTPDShim
import Logging
import OffThePool
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: an epoll thread pool with suspend/resume, for short
/// requests and thousands of long-lived streams.
///
/// ```swift
/// let server = HTTPServer(configuration: .init()) { request, responder in
///     responder.respond(HTTPResponse(body: "hello"))
/// }
/// try server.start()
/// print(server.port!)
/// await server.shutdown()
/// ```
/// Or scoped: ``withHTTPServer(configuration:logger:handler:_:)``; or as a long-running service: ``run()``.
public final class HTTPServer: Sendable {
    /// The configuration the server was created with.
    public let configuration: HTTPServerConfiguration
    let logger: Logger
    let handler: HTTPHandler

    private let lifecycle = Mutex(Lifecycle())
    private let registry = Mutex(Registry())
    /// Set when shutdown begins: a request that arrives on an open connection is refused before its handler runs, and
    /// only a request that may change something is still parked. Read without a lock on every request, and under the
    /// registry's lock by ``park(_:finishesBeforeShutdown:)`` and ``unpark(_:)``: set before shutdown takes the
    /// registry's lock to list the parked requests, so a request parked after that list sees it.
    private let shutdownStarted = Atomic<Bool>(false)
    /// Open TCP connections (connection-started minus connection-closed notifications).
    let connectionCount = Atomic<Int>(0)
    private let streamCount = Atomic<Int>(0)
    /// The request-body bytes held now, against ``HTTPServerConfiguration/maxBodyBytesInFlight``.
    private let bodyBudget: Mutex<BodyBudget>
    private let lastLibraryMessage = Mutex<String?>(nil)
    /// Watches the sockets of waiting requests and idle streams for a client that leaves.
    let hangUpWatcher = HangUpWatcher()
    /// Wakes libmicrohttpd's workers when accepted connections sit unread (see ``AcceptStallWatchdog``).
    let acceptWatchdog = AcceptStallWatchdog()
    /// Refuses slow clients and connections over their address's share; `nil` when none of that is configured.
    let connectionGuard: ConnectionGuard?

    /// Creates a stopped server.
    /// - Parameters:
    ///   - configuration: bind address, limits and timeouts.
    ///   - logger: receives libmicrohttpd's messages (debug level) and handler misuse (error level).
    ///   - handler: called on a libmicrohttpd thread for every complete request; must not block.
    public init(
        configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
        logger: Logger = Logger(label: "MicroHTTPD"),
        handler: @escaping HTTPHandler
    ) {
        self.configuration = configuration
        self.logger = logger
        self.handler = handler
        bodyBudget = Mutex(
            BodyBudget(limit: configuration.maxBodyBytesInFlight, shareLimit: configuration.maxBodyBytesPerAddress))
        connectionGuard = ConnectionGuard(configuration: configuration)
    }

    /// The bound TCP port once started (the real one when the configuration asked for port 0).
    public var port: Int? {
        lifecycle.withLock { $0.port.map(Int.init) }
    }

    /// Open TCP connections.
    public var activeConnectionCount: Int {
        connectionCount.load(ordering: .relaxed)
    }

    /// Streaming responses queued and not yet over.
    public var activeStreamCount: Int {
        streamCount.load(ordering: .relaxed)
    }

    /// Request-body bytes held now: buffered, or handed to the handler with a request not yet over.
    public var bodyBytesInFlight: Int {
        bodyBudget.withLock { $0.inFlight }
    }

    /// Binds and starts the worker threads.
    /// - Throws: ``HTTPServerError`` for a bad configuration, a second start, or when libmicrohttpd
    ///   refuses (e.g. port in use).
    public func start() throws(HTTPServerError) {
        try validateConfiguration()
        let claimed = lifecycle.withLock { lifecycle in
            guard case .idle = lifecycle.state else { return false }
            lifecycle.state = .starting
            return true
        }
        guard claimed else { throw .alreadyStarted("the server was already started or stopped") }
        warnIfFileLimitTooLow()
        if !hangUpWatcher.start() {
            logger.warning("Could not watch idle streams for clients that leave; they are noticed at their next write")
        }
        if connectionGuard?.start() == false {
            logger.warning(
                "Could not start the thread that times request heads and bodies; slow clients are not refused")
        }
        do {
            let (daemon, port) = try startDaemon()
            lifecycle.withLock {
                $0.state = .running(daemon)
                $0.port = port
            }
            if !acceptWatchdog.start(host: configuration.host, port: port) {
                logger.warning("Could not start the accept watchdog; connections libmicrohttpd sets aside wait longer")
            }
        } catch {
            hangUpWatcher.stop()
            connectionGuard?.stop()
            lifecycle.withLock { $0.state = .idle }
            throw error
        }
    }

    /// Shuts down gracefully; idempotent, and concurrent callers all wait for the same shutdown.
    ///
    /// Stops accepting connections, ends every stream (clients receive the terminating chunk), answers pending
    /// deferred reads (``HTTPServerConfiguration/onlyReads``) and any request that arrives on an open connection with
    /// ``HTTPServerRejection/shuttingDown`` (their handlers did nothing, or only read), and waits up to
    /// ``HTTPServerConfiguration/shutdownGracePeriod`` for pending requests that may change something to get their
    /// answers. Those still waiting then get ``HTTPServerRejection/unansweredAtShutdown``; then the daemon stops
    /// (closing idle keep-alive connections). Never stops with suspended connections.
    public func shutdown() async {
        enum Step {
            case stop(DaemonResources)
            case wait
            case done
        }
        let step = lifecycle.withLock { lifecycle -> Step in
            switch lifecycle.state {
            case .idle:
                lifecycle.state = .stopped
                return .done
            case .running(let daemon):
                lifecycle.state = .stopping
                return .stop(daemon)
            case .starting, .stopping:
                return .wait
            case .stopped:
                return .done
            }
        }
        switch step {
        case .done:
            return
        case .wait:
            await waitUntilStopped()
        case .stop(let daemon):
            // Detached so that a cancelled caller still drains and stops properly.
            await Task.detached { await self.stopDaemon(daemon) }.value
        }
    }

    /// Starts the server if needed, then runs until the task is cancelled or ``shutdown()`` is
    /// called; either way returns after a graceful shutdown (a `ServiceLifecycle`-style `run()`).
    public func run() async throws {
        if lifecycle.withLock({ if case .idle = $0.state { true } else { false } }) {
            try start()
        }
        await withTaskCancellationHandler {
            await waitUntilStopped()
        } onCancel: {
            Task { await self.shutdown() }
        }
    }

    // MARK: Shutdown internals

    private func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let stopped = lifecycle.withLock { lifecycle in
                if case .stopped = lifecycle.state { return true }
                lifecycle.waiters.append(continuation)
                return false
            }
            if stopped { continuation.resume() }
        }
    }

    /// Stops the connection guard's thread, libmicrohttpd's and the hang-up watcher's; each joins its thread, so this
    /// runs in `blocking`, off the concurrency pool.
    @available(*, noasync)
    private static func stopThreads(
        of daemon: ConnectionDaemon, _ watcher: HangUpWatcher, _ connectionGuard: ConnectionGuard?
    ) {
        connectionGuard?.stop()
        MHD_stop_daemon(daemon.raw)
        watcher.stop()
    }

    private func stopDaemon(_ daemon: DaemonResources) async {
        let watchdog = acceptWatchdog
        await blocking { watchdog.stop() }
        shutdownStarted.store(true, ordering: .releasing)
        // Quiesced before the parked requests are resumed: libmicrohttpd 0.9.75's MHD_quiesce_daemon takes the listen
        // socket out of each worker's epoll set while a worker that is awake may do the same in its loop (it reads the
        // quiesced flag and the in-set flag without a lock), and the one that comes second aborts the process
        // ("Failed to remove listen FD from epoll set"). Resuming first woke every worker with a parked request just
        // then; now they are woken after the listen socket is out of their sets.
        let listenSocket = MHD_quiesce_daemon(daemon.daemon.raw)
        if listenSocket >= 0 {
            // Closed only after MHD_stop_daemon (a worker may still hold it), but no longer listening: a new connect
            // is refused at once (a client or balancer tries elsewhere) instead of waiting in the listen queue for
            // the grace period and then being reset.
            _ = cmhd_stop_listening(listenSocket)
        }
        let parked = registry.withLock { Array($0.exchanges.values) }
        for exchange in parked {
            exchange.shutdown()
        }
        // Waits for the last parked request to complete (its completion wakes this), at most the grace period:
        // requests that may change something get their answers meanwhile.
        let gracePeriod = configuration.shutdownGracePeriod
        await waitUntilDrained(atMost: gracePeriod)
        let unanswered = registry.withLock { registry in
            registry.deadlinePassed = true
            return Array(registry.exchanges.values)
        }
        if !unanswered.isEmpty {
            for exchange in unanswered {
                exchange.shutdownDeadlineReached()
            }
            // Those answers, queued now, get a moment to reach their clients.
            await waitUntilDrained(atMost: .seconds(1))
        }
        let remaining = registry.withLock { $0.exchanges.count }
        if remaining > 0 {
            logger.warning(
                "HTTP requests still in flight after the shutdown grace period",
                metadata: ["http.server.pending": "\(remaining)"]
            )
        }
        // Safe: every parked request was resumed and none can suspend again (the deadline has passed);
        // MHD_stop_daemon processes pending resumes before it checks for suspended connections.
        let watcher = hangUpWatcher
        let connectionGuard = connectionGuard
        await blocking { Self.stopThreads(of: daemon.daemon, watcher, connectionGuard) }
        if listenSocket >= 0 {
            close(listenSocket)
        }
        daemon.release()
        Unmanaged.passUnretained(self).release()
        let waiters = lifecycle.withLock { lifecycle in
            lifecycle.state = .stopped
            defer { lifecycle.waiters = [] }
            return lifecycle.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Called from callbacks

    /// Whether shutdown has begun.
    var isShuttingDown: Bool { shutdownStarted.load(ordering: .acquiring) }

    enum Parking {
        case parked
        /// Shutdown has begun: a read is answered at once.
        case shuttingDown
        /// The shutdown's grace period is over: nothing may wait.
        case pastDeadline
    }

    /// Registers a request that may outlive its handler call. Once shutdown has begun only a request that may change
    /// something (`finishesBeforeShutdown`) is still registered, to wait for its answer until the grace period ends.
    func park(_ exchange: Exchange, finishesBeforeShutdown: Bool) -> Parking {
        registry.withLock { registry in
            if registry.deadlinePassed { return .pastDeadline }
            if isShuttingDown && !finishesBeforeShutdown { return .shuttingDown }
            registry.exchanges[ObjectIdentifier(exchange)] = exchange
            return .parked
        }
    }

    func unpark(_ exchange: Exchange) {
        let drained = registry.withLock { registry -> CheckedContinuation<Void, Never>? in
            registry.exchanges.removeValue(forKey: ObjectIdentifier(exchange))
            guard isShuttingDown, registry.exchanges.isEmpty else { return nil }
            defer { registry.drainWaiter = nil }
            return registry.drainWaiter
        }
        drained?.resume()
    }

    /// Waits until no parked request is left, or `limit` has passed.
    private func waitUntilDrained(atMost limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntilDrained() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once shutdown has begun and no parked request is left, or when the task is cancelled.
    private func waitUntilDrained() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = registry.withLock { registry -> Bool in
                    if registry.exchanges.isEmpty || Task.isCancelled { return true }
                    registry.drainWaiter = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            let waiter = registry.withLock { registry -> CheckedContinuation<Void, Never>? in
                defer { registry.drainWaiter = nil }
                return registry.drainWaiter
            }
            waiter?.resume()
        }
    }

    /// Whether a body from `address` that declares `length` bytes fits beside the bodies held now (``BodyBudget``).
    func admitsBody(declared length: Int, from address: ClientAddressKey?) -> BodyBudget.Fit {
        bodyBudget.withLock { $0.admits(declared: length, from: address) }
    }

    /// Takes `count` bytes of a body from `address` as they are buffered; when they do not fit, nothing is taken.
    func takeBodyBytes(_ count: Int, from address: ClientAddressKey?) -> BodyBudget.Fit {
        bodyBudget.withLock { $0.take(count, from: address) }
    }

    /// Gives back the bytes of a body from `address` whose request is over (or that was refused).
    func releaseBodyBytes(_ count: Int, from address: ClientAddressKey?) {
        guard count > 0 else { return }
        bodyBudget.withLock { $0.release(count, from: address) }
    }

    func streamStarted() {
        streamCount.add(1, ordering: .relaxed)
    }

    func streamEnded() {
        streamCount.subtract(1, ordering: .relaxed)
    }

    /// At a request's first call: whether it can wait for its second call without an ``Exchange``, which the hot
    /// path may then make unnecessary. Not when there is no hot path, when the connection limit is
    /// exceeded (an early 503), during shutdown (a 503 too), or when the head `declaresBody` with a `Content-Length` or
    /// `Transfer-Encoding` (a body to admit from the head and receive, or an early 413).
    func mayAnswerOnHotPath(declaresBody: Bool) -> Bool {
        configuration.hotPath != nil
            && !connectionLimitExceeded
            && !isShuttingDown
            && !declaresBody
    }

    /// The hot path's answer to a request with no body, if it has one.
    func hotAnswer(
        _ connection: ConnectionHandle, method: UnsafePointer<CChar>?, target: String?
    ) -> HTTPPreparedResponse? {
        guard let hotPath = configuration.hotPath else { return nil }
        return hotPath(
            HTTPRequestHead(connection: connection, method: method.map { String(cString: $0) } ?? "", target: target))
    }

    /// Whether more connections are open than the configured limit (the headroom above it is for the 503s).
    var connectionLimitExceeded: Bool {
        activeConnectionCount > configuration.connectionLimit
    }

    func libraryLogged(_ message: String) {
        lastLibraryMessage.withLock { $0 = message }
        logger.debug("libmicrohttpd message", metadata: ["mhd.message": "\(message)"])
        if message.hasPrefix(Self.libraryAnswerPrefix) {
            answerHeadRefusedByLibrary(status: Int(message.dropFirst(Self.libraryAnswerPrefix.count).prefix(3)))
        }
    }

    /// How libmicrohttpd 0.9.75 logs an answer it gives itself, on the connection's thread, before it queues it.
    private static let libraryAnswerPrefix = "Error processing request (HTTP response code is "

    /// libmicrohttpd is answering `status` itself. When that is a head it refuses from its fields, after parsing them
    /// and before the access handler (a `Content-Length` it cannot read or hold, a `Cookie` its pool cannot copy),
    /// 0.9.75 writes its answer's head twice: it queues the answer, goes on as if the head had been accepted, and
    /// builds the head again. So the server writes its own answer on the socket in its place, the way
    /// ``ConnectionGuard`` does, and shuts the socket down: libmicrohttpd's send then fails, and it closes the
    /// connection. Its other answers (a malformed request line or field line, a head too large to read) go out once,
    /// as it writes them.
    private func answerHeadRefusedByLibrary(status: Int?) {
        guard let raw = cmhd_pending_head_refused_by_library() else { return }
        cmhd_pending_head_remove(raw)
        let connection = ConnectionHandle(raw: raw)
        let rejection: HTTPServerRejection
        switch status {
        case 413: rejection = .payloadTooLarge
        case 431: rejection = .headerFieldsTooLarge
        case 400 where MHD_lookup_connection_value(raw, MHD_ValueKind.HEADER_KIND, "Content-Length") != nil:
            rejection = .invalidContentLength
        default: return
        }
        if let connectionGuard, let context = connection.context, !connectionGuard.headersArrived(context) {
            return  // The guard has answered it already.
        }
        ConnectionGuard.send(
            ConnectionGuard.bytes(of: configuration.rejectionResponse(rejection)),
            thenShutDown: cmhd_connection_fd(raw))
    }

    // MARK: Start internals

    /// Past `RLIMIT_NOFILE`, accept() fails and libmicrohttpd stops accepting until a connection
    /// closes: clients would wait in the backlog instead of getting the 503.
    private func warnIfFileLimitTooLow() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let needed = configuration.connectionLimit + configuration.connectionLimitHeadroom + 64
        if limit.rlim_cur != rlim_t.max && Int(clamping: limit.rlim_cur) < needed {
            logger.warning(
                "The open-file limit is below the connection limit; raise ulimit -n",
                metadata: ["process.rlimit_nofile": "\(limit.rlim_cur)", "http.server.needed_fds": "\(needed)"]
            )
        }
    }

    private func validateConfiguration() throws(HTTPServerError) {
        let c = configuration
        if c.threadPoolSize < 1 || c.threadPoolSize > 1024 {
            throw .invalidConfiguration("threadPoolSize must be in 1...1024, got \(c.threadPoolSize)")
        }
        if c.connectionLimit < 1 || c.connectionLimitHeadroom < 0
            || c.connectionLimit + c.connectionLimitHeadroom > Int(UInt32.max)
        {
            throw .invalidConfiguration(
                "connectionLimit must be ≥ 1 and connectionLimitHeadroom ≥ 0, got \(c.connectionLimit)/\(c.connectionLimitHeadroom)"
            )
        }
        if c.connectionMemoryLimit < 2048 {
            throw .invalidConfiguration("connectionMemoryLimit must be ≥ 2048 bytes, got \(c.connectionMemoryLimit)")
        }
        if c.idleTimeoutSeconds < 0 || c.idleTimeoutSeconds > Int(UInt32.max) {
            throw .invalidConfiguration("idleTimeoutSeconds must be ≥ 0, got \(c.idleTimeoutSeconds)")
        }
        if c.maxBodySize < 0 {
            throw .invalidConfiguration("maxBodySize must be ≥ 0, got \(c.maxBodySize)")
        }
        if let inFlight = c.maxBodyBytesInFlight, inFlight < c.maxBodySize {
            throw .invalidConfiguration(
                "maxBodyBytesInFlight must be ≥ maxBodySize (\(c.maxBodySize)), got \(inFlight)")
        }
        if let perAddress = c.maxBodyBytesPerAddress, perAddress < c.maxBodySize {
            throw .invalidConfiguration(
                "maxBodyBytesPerAddress must be ≥ maxBodySize (\(c.maxBodySize)), got \(perAddress)")
        }
        if let perAddress = c.maxConnectionsPerAddress, perAddress < 1 {
            throw .invalidConfiguration("maxConnectionsPerAddress must be ≥ 1, got \(perAddress)")
        }
        if let timeout = c.headerTimeout, timeout <= .zero {
            throw .invalidConfiguration("headerTimeout must be above zero, got \(timeout)")
        }
        if let rate = c.minimumBodyRate, rate.bytes < 1 || rate.per <= .zero {
            throw .invalidConfiguration(
                "minimumBodyRate must have bytes ≥ 1 and per above zero, got \(rate.bytes) per \(rate.per)")
        }
        if let backlog = c.listenBacklog, backlog < 1 || backlog > Int(Int32.max) {
            throw .invalidConfiguration("listenBacklog must be ≥ 1, got \(backlog)")
        }
    }

    private func startDaemon() throws(HTTPServerError) -> (DaemonResources, UInt16) {
        let c = configuration
        let address = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: 1)
        let family = cmhd_make_sockaddr(c.host, c.port, address)
        guard family != 0 else {
            address.deallocate()
            throw .invalidConfiguration("host must be a numeric IPv4 or IPv6 address, got \"\(c.host)\"")
        }
        let self_ = Unmanaged.passRetained(self)
        let loggerBox = UnsafeMutablePointer<cmhd_logger>.allocate(capacity: 1)
        loggerBox.initialize(to: cmhd_logger(function: logThunk, context: self_.toOpaque()))
        let resources = DaemonResources(address: address, logger: loggerBox)

        var flags =
            MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        if family == 6 { flags |= MHD_USE_IPv6.rawValue }
        if c.turbo { flags |= MHD_USE_TURBO.rawValue }

        let hardLimit = max(c.connectionLimit + c.connectionLimitHeadroom, c.threadPoolSize)
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(option: MHD_OPTION.SOCK_ADDR, value: 0, ptr_value: UnsafeMutableRawPointer(address)),
            MHD_OptionItem(option: MHD_OPTION.CONNECTION_LIMIT, value: hardLimit, ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.CONNECTION_MEMORY_LIMIT, value: c.connectionMemoryLimit, ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.CONNECTION_TIMEOUT, value: c.idleTimeoutSeconds, ptr_value: nil),
            MHD_OptionItem(
                option: MHD_OPTION.NOTIFY_COMPLETED,
                value: unsafeBitCast(requestCompletedThunk, to: Int.self),
                ptr_value: self_.toOpaque()
            ),
            MHD_OptionItem(
                option: MHD_OPTION.NOTIFY_CONNECTION,
                value: unsafeBitCast(connectionNotifyThunk, to: Int.self),
                ptr_value: self_.toOpaque()
            ),
            MHD_OptionItem(
                option: MHD_OPTION.URI_LOG_CALLBACK,
                value: unsafeBitCast(uriLogThunk, to: Int.self),
                ptr_value: self_.toOpaque()
            ),
        ]
        if c.threadPoolSize > 1 {
            options.append(MHD_OptionItem(option: MHD_OPTION.THREAD_POOL_SIZE, value: c.threadPoolSize, ptr_value: nil))
        }
        if let backlog = c.listenBacklog {
            options.append(MHD_OptionItem(option: MHD_OPTION.LISTEN_BACKLOG_SIZE, value: backlog, ptr_value: nil))
        }
        options.append(MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil))

        lastLibraryMessage.withLock { $0 = nil }
        let started = options.withUnsafeBufferPointer { items in
            cmhd_start_daemon(flags, c.port, accessHandlerThunk, self_.toOpaque(), items.baseAddress, loggerBox)
        }
        guard let started else {
            self_.release()
            resources.release()
            let detail = lastLibraryMessage.withLock { $0 } ?? "no message from libmicrohttpd"
            throw .startFailed("could not listen on \(c.host):\(c.port): \(detail)")
        }
        var daemon = resources
        daemon.daemon = ConnectionDaemon(raw: started)
        return (daemon, cmhd_daemon_bind_port(started))
    }
}

/// What the daemon needs alive until `MHD_stop_daemon` returns.
struct DaemonResources: @unchecked Sendable {
    let address: UnsafeMutablePointer<sockaddr_storage>
    let logger: UnsafeMutablePointer<cmhd_logger>
    var daemon = ConnectionDaemon(raw: OpaquePointer(bitPattern: 1)!)

    func release() {
        address.deallocate()
        logger.deinitialize(count: 1)
        logger.deallocate()
    }
}

struct ConnectionDaemon: @unchecked Sendable {
    let raw: OpaquePointer
}

private struct Lifecycle: ~Copyable {
    enum State {
        case idle
        case starting
        case running(DaemonResources)
        case stopping
        case stopped
    }

    var state: State = .idle
    var port: UInt16?
    var waiters: [CheckedContinuation<Void, Never>] = []
}

private struct Registry: ~Copyable {
    var exchanges: [ObjectIdentifier: Exchange] = [:]
    /// The shutdown's grace period is over.
    var deadlinePassed = false
    /// Shutdown waiting for the last parked request (``HTTPServer/waitUntilDrained()``).
    var drainWaiter: CheckedContinuation<Void, Never>?
}

/// Runs `body` with a started server and shuts it down gracefully afterwards (also on error).
/// - Parameters:
///   - configuration: the server configuration (default: 127.0.0.1, ephemeral port).
///   - logger: the server's logger.
///   - handler: the request handler.
///   - body: receives the running server (read ``HTTPServer/port`` for the bound port).
/// - Throws: ``HTTPServerError`` if the server cannot start, or what `body` throws.
public func withHTTPServer<Result>(
    configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
    logger: Logger = Logger(label: "MicroHTTPD"),
    handler: @escaping HTTPHandler,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (HTTPServer) async throws -> sending Result
) async throws -> sending Result {
    let server = HTTPServer(configuration: configuration, logger: logger, handler: handler)
    try server.start()
    do {
        let result = try await body(server)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}
