import Synchronization
import TimeSource

/// Signs of life of one socket, as readings of the client's clock: written from the socket's callbacks, read by its
/// watchdog (``SocketWatchdog``).
final class SocketActivity: Sendable {
    struct Snapshot: Equatable, Sendable {
        /// When the WebSocket handshake finished; `nil` while connecting.
        var openedAt: Duration?
        /// When the server last sent a message (or the socket opened).
        var lastMessage: Duration
        /// When the client last sent a WebSocket ping; `nil` before the first.
        var lastPing: Duration?
        /// Whether the last ping is still unanswered.
        var awaitingPong = false
    }

    private let clock: ElapsedClock
    private let state: Mutex<Snapshot>

    init(clock: ElapsedClock) {
        self.clock = clock
        state = Mutex(Snapshot(lastMessage: clock.now))
    }

    func opened() {
        let now = clock.now
        state.withLock {
            $0.openedAt = now
            $0.lastMessage = now
        }
    }

    func messageReceived() {
        let now = clock.now
        state.withLock { $0.lastMessage = now }
    }

    func pingSent(at now: Duration) {
        state.withLock {
            $0.lastPing = now
            $0.awaitingPong = true
        }
    }

    func pongReceived() {
        state.withLock { $0.awaitingPong = false }
    }

    var snapshot: Snapshot { state.withLock { $0 } }
}

/// The timing rules of one socket, on the client's clock (``ConvexClientConfiguration/clock``), so that a test clock
/// moves through them: the connect timeout, the inactivity timeout on server messages, and the client's own WebSocket
/// pings, each of which must be answered before the next is due. A pure function of the readings.
struct SocketWatchdog: Sendable {
    enum Verdict: Equatable, Sendable {
        case carryOn
        case sendPing
        /// The socket is to be dropped, for this reason (the client's `lastCloseReason`).
        case end(String)
    }

    /// The clock's reading when the connect began.
    var startedAt: Duration
    var connectTimeout: Duration
    var inactivityTimeout: Duration
    var pingInterval: Duration?
    /// Named in the connect timeout's reason.
    var url: String

    /// How often the watchdog looks: a fifth of the shortest period it watches, at most a second.
    var tick: Duration {
        min(inactivityTimeout / 5, connectTimeout / 5, pingInterval.map { $0 / 5 } ?? .seconds(1), .seconds(1))
    }

    func check(_ activity: SocketActivity.Snapshot, now: Duration) -> Verdict {
        guard let openedAt = activity.openedAt else {
            return now - startedAt > connectTimeout
                ? .end("Connection to \(url) timed out after \(connectTimeout)") : .carryOn
        }
        if now - activity.lastMessage > inactivityTimeout { return .end("InactiveServer") }
        guard let pingInterval, now - (activity.lastPing ?? openedAt) >= pingInterval else { return .carryOn }
        return activity.awaitingPong
            ? .end("PongTimeout: no answer to a WebSocket ping within \(pingInterval)") : .sendPing
    }
}
