/// The deadlines of one connection against clients that send too slowly: the first request's head within
/// ``HTTPServerConfiguration/headerTimeout`` of the accept, then each body at ``HTTPServerConfiguration/minimumBodyRate``
/// at least. A plain value, tested without I/O: ``ConnectionGuard`` keeps one per connection under a lock that the
/// connection's libmicrohttpd thread (the events) and the guard's thread (``tick(now:)``) share, so that a connection
/// is either refused by the guard or served on, never both.
///
/// Time is a `Duration` since any fixed origin (the guard's clock).
struct ConnectionDeadline: Sendable, Equatable {
    /// The least progress a body must make: `bytes` in every window of `per`.
    struct MinimumRate: Sendable, Equatable {
        var bytes: Int
        var per: Duration
    }

    /// A body's progress since its first call.
    struct BodyProgress: Sendable, Equatable {
        let rate: MinimumRate
        /// The bytes received so far.
        var received = 0
        /// When the current window began, and the bytes received by then.
        var windowStart: Duration
        var receivedAtWindowStart = 0
    }

    enum Phase: Sendable, Equatable {
        /// Nothing is timed: between requests (the idle timeout's), while the handler has the request, or no rule
        /// applies.
        case untimed
        /// The first request's line and header fields must have arrived by `deadline`.
        case header(deadline: Duration)
        /// A body is arriving.
        case body(BodyProgress)
        /// The server answered the connection itself (a 408, or a 429 at accept) and shut its socket down:
        /// libmicrohttpd closes it, and nothing more of it is served.
        case refused
        /// libmicrohttpd closed the connection: its socket is not to be touched again.
        case closed
    }

    enum TickAction: Sendable, Equatable {
        case none
        /// Answer ``HTTPServerRejection/requestTimeout`` on the socket and shut it down (under the lock).
        case refuse
    }

    private(set) var phase = Phase.untimed

    /// Whether a deadline runs: the guard's thread looks at the connection.
    var isTimed: Bool {
        switch phase {
        case .header, .body: true
        case .untimed, .refused, .closed: false
        }
    }

    /// The connection was accepted at `now`: its first request's head is due within `headerTimeout`, if any.
    mutating func accepted(now: Duration, headerTimeout: Duration?) {
        guard case .untimed = phase, let headerTimeout else { return }
        phase = .header(deadline: now + headerTimeout)
    }

    /// The server refuses the connection at its accept (over its address's share).
    mutating func refusedAtAccept() {
        if case .closed = phase { return }
        phase = .refused
    }

    /// A request's line and header fields arrived. Returns whether to serve it: `false` once the connection is refused
    /// (its deadline passed just before), and libmicrohttpd is to close it.
    mutating func headersArrived() -> Bool {
        switch phase {
        case .header, .untimed:
            phase = .untimed
            return true
        case .body:
            return true
        case .refused, .closed:
            return false
        }
    }

    /// A body starts at `now` (its request's first call), to advance at `rate` at least.
    mutating func bodyStarted(now: Duration, rate: MinimumRate) {
        guard case .untimed = phase else { return }
        phase = .body(BodyProgress(rate: rate, windowStart: now))
    }

    /// `count` more bytes of the body arrived.
    mutating func bodyReceived(_ count: Int) {
        guard case .body(var progress) = phase else { return }
        progress.received += count
        phase = .body(progress)
    }

    /// The whole body arrived. Returns whether to serve the request: `false` once the connection is refused.
    mutating func bodyEnded() -> Bool {
        switch phase {
        case .body, .untimed, .header:
            phase = .untimed
            return true
        case .refused, .closed:
            return false
        }
    }

    /// The guard's periodic look at `now`: a head past its deadline, or a body that advanced less than its rate asks in
    /// a window that has ended, is refused. A body that kept up starts a new window.
    mutating func tick(now: Duration) -> TickAction {
        switch phase {
        case .header(let deadline) where now >= deadline:
            phase = .refused
            return .refuse
        case .body(var progress) where now - progress.windowStart >= progress.rate.per:
            if progress.received - progress.receivedAtWindowStart < progress.rate.bytes {
                phase = .refused
                return .refuse
            }
            progress.windowStart = now
            progress.receivedAtWindowStart = progress.received
            phase = .body(progress)
            return .none
        case .untimed, .header, .body, .refused, .closed:
            return .none
        }
    }

    /// libmicrohttpd closed the connection (its socket is closed right after).
    mutating func closed() {
        phase = .closed
    }
}
