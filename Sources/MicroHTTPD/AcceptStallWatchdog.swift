import CMicroHTTPDShim
import Synchronization

/// Accepted connections by the tick of the watchdog in which they were accepted, until their first request line
/// arrives (or they close): a pure value, tested without sockets or threads.
struct WaitingConnections: Sendable {
    /// The current tick.
    private(set) var tick: UInt64 = 0
    /// Connections still waiting for their first request, by the tick of their accept.
    private(set) var waiting: [UInt64: Int] = [:]

    /// A connection was accepted; returns its tick, to hand back to ``requestArrived(acceptedAt:)``.
    mutating func accepted() -> UInt64 {
        waiting[tick, default: 0] += 1
        return tick
    }

    /// The first request line of a connection accepted at `tick` arrived (or it closed before one did).
    mutating func requestArrived(acceptedAt tick: UInt64) {
        guard let count = waiting[tick] else { return }
        waiting[tick] = count > 1 ? count - 1 : nil
    }

    /// The watchdog's tick: whether a connection accepted before the previous tick still has no request read, a
    /// whole period or more after its accept.
    mutating func advance() -> Bool {
        tick += 1
        return waiting.keys.contains { $0 + 2 <= tick }
    }
}

/// Wakes libmicrohttpd's workers when accepted connections sit unread.
///
/// libmicrohttpd's epoll loop (`MHD_epoll`, 0.9.75 to at least 1.0.1) keeps calling `epoll_wait` with its full
/// timeout (none, without connection deadlines) while each call returns exactly `MAX_EVENTS` (128) events, and only
/// then reads the connections those events named. When 128 connections became ready at once and nothing follows, the
/// worker sleeps with them unread: their requests wait until some other event wakes it (an idle timeout, the next
/// connection). Under load this left 128 or 256 of 10,000 new streams unanswered for the whole 30 s idle timeout,
/// with the C floor server in the same mode too. The watchdog notices accepted connections whose first request line
/// has not arrived a whole period after their accept, and then connects to the server's own port once: the listening
/// socket is in every worker's epoll set, so each `epoll_wait` returns and the worker reads what it had set aside.
/// A client that connects and says nothing also earns a poke per period, which costs one accept.
///
/// A poke is not a client: its socket is bound before it connects, the watchdog remembers the port, and the server
/// leaves a connection from that port out of its connection count (``claimPoke(clientPort:)``), so that a poke never
/// takes the place of a client at the connection limit.
final class AcceptStallWatchdog: Sendable {
    static let periodMilliseconds: Int32 = 250

    /// The C watchdog thread; its calls may come from any thread.
    private struct Handle: @unchecked Sendable {
        let raw: OpaquePointer
    }

    private let state = Mutex(WaitingConnections())
    private let handle = Mutex<Handle?>(nil)
    /// Pokes made, and pokes the server accepted (tests read them).
    let pokes = Atomic<Int>(0)
    let pokesAccepted = Atomic<Int>(0)
    /// The source port of the latest poke, 0 before the first.
    private let pokeSourcePort = Atomic<UInt16>(0)

    /// Accepted connections whose first request line has not arrived.
    var unreadConnections: Int {
        state.withLock { $0.waiting.values.reduce(0, +) }
    }

    /// A connection was accepted (libmicrohttpd thread); returns the tick to pass to ``requestArrived(acceptedAt:)``.
    func accepted() -> UInt64 {
        state.withLock { $0.accepted() }
    }

    /// The connection accepted at `tick` got its first request line, or closed without one.
    func requestArrived(acceptedAt tick: UInt64) {
        state.withLock { $0.requestArrived(acceptedAt: tick) }
    }

    /// Whether a connection from `clientPort` is the watchdog's latest poke, which it then is no longer: each poke is
    /// claimed once, by its own accept (or, if a client from the same port number is accepted first, by that one,
    /// which then goes uncounted while the poke counts instead, a swap of no consequence).
    func claimPoke(clientPort: UInt16) -> Bool {
        clientPort != 0
            && pokeSourcePort.compareExchange(expected: clientPort, desired: 0, ordering: .acquiringAndReleasing)
                .exchanged
    }

    /// A poke's socket is bound to `sourcePort` and about to connect (the watchdog's thread; tests call it too).
    func pokeBound(sourcePort: UInt16) {
        pokeSourcePort.store(sourcePort, ordering: .releasing)
    }

    /// Starts the watchdog's thread, for a server listening on `host`:`port`; `false` if the system refused.
    func start(host: String, port: UInt16) -> Bool {
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard
            let raw = cmhd_accept_watchdog_start(
                host, port, Self.periodMilliseconds, watchdogTickThunk, pokeBoundThunk, context)
        else { return false }
        handle.withLock { $0 = Handle(raw: raw) }
        return true
    }

    /// Stops the thread (joining it), off the concurrency pool; does nothing if it is not running.
    @available(*, noasync)
    func stop() {
        let running = handle.withLock { handle -> Handle? in
            defer { handle = nil }
            return handle
        }
        if let running { cmhd_accept_watchdog_stop(running.raw) }
    }

    /// The watchdog thread's tick: whether to poke.
    fileprivate func tick() -> Bool {
        guard state.withLock({ $0.advance() }) else { return false }
        pokes.add(1, ordering: .relaxed)
        return true
    }
}

private let watchdogTickThunk: cmhd_watchdog_tick_function = { context in
    guard let context else { return 0 }
    return Unmanaged<AcceptStallWatchdog>.fromOpaque(context).takeUnretainedValue().tick() ? 1 : 0
}

private let pokeBoundThunk: cmhd_poke_bound_function = { context, sourcePort in
    guard let context else { return }
    Unmanaged<AcceptStallWatchdog>.fromOpaque(context).takeUnretainedValue().pokeBound(sourcePort: sourcePort)
}
