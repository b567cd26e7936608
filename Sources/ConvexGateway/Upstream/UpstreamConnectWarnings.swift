import Logging
import Synchronization

/// Failures to connect to the deployment, logged at `warning` with their cause in plain words (``ConnectFailureCause``)
/// and the client's own detail beside it, at most one line per `interval` for the whole gateway: every caller identity
/// has a connection of its own, and when the deployment is down or the URL is wrong they all fail together, so one line
/// says it for all of them (with how many failures it stands for).
package final class UpstreamConnectWarnings: Sendable {
    /// How often a failure to connect may be logged, at most.
    package static let defaultInterval = Duration.seconds(30)

    private struct State {
        /// When the last line was logged, on ``clock``.
        var lastLogged: Duration?
        /// Failures since then that were not logged.
        var suppressed = 0
    }

    private let state = Mutex(State())
    private let deploymentURL: RedactedURL
    private let clock: GatewayClock
    private let interval: Duration
    private let logger: Logger

    package init(
        deploymentURL: String, clock: GatewayClock, interval: Duration = defaultInterval, logger: Logger
    ) {
        self.deploymentURL = RedactedURL(deploymentURL)
        self.clock = clock
        self.interval = interval
        self.logger = logger
    }

    /// A connection ended before it was up, or could not be made: `reason` is the client's (``ConnectionState``'s
    /// `reconnecting` reason). Reasons that are not failures to connect (a connection that was up and dropped) are
    /// left to the client's own log.
    package func connectionFailed(reason: String) {
        guard let cause = ConnectFailureCause(reason: reason) else { return }
        let now = clock.now
        let suppressed: Int? = state.withLock { state in
            if let last = state.lastLogged, now - last < interval {
                state.suppressed += 1
                return nil
            }
            defer { (state.lastLogged, state.suppressed) = (now, 0) }
            return state.suppressed
        }
        guard let suppressed else { return }
        var metadata: Logger.Metadata = [
            "convex.url": "\(deploymentURL)", "cause": "\(cause)", "error": "\(reason)",
        ]
        if suppressed > 0 { metadata["failures.unlogged"] = "\(suppressed)" }
        logger.warning("Cannot connect to the Convex deployment", metadata: metadata)
    }
}

/// Why a connection to the deployment could not be made, in plain words, read from the client's reason (the text of
/// the networking error it met, which names the URL too).
package enum ConnectFailureCause: String, Sendable, CustomStringConvertible {
    case refused = "connection refused (nothing accepts connections at that host and port)"
    case timedOut = "timed out (no answer from that host and port)"
    case tls = "TLS failed (the certificate or the TLS handshake was refused)"
    case dns = "DNS lookup failed (no such host)"
    case notADeployment = "not a Convex deployment (the WebSocket upgrade was refused)"
    case reset = "connection reset by the other side"
    case other = "connection failed"

    /// The cause of a failure to connect; `nil` when `reason` is not one (the connection was up, then ended).
    /// The client's reasons for a failed connect are `Connection to <url> failed: <error>` and `Connection to <url>
    /// timed out after <duration>`.
    package init?(reason: String) {
        guard reason.hasPrefix("Connection to ") else { return nil }
        if let failed = reason.firstRange(of: " failed: ") {
            self.init(error: reason[failed.upperBound...].lowercased())
        } else if reason.contains(" timed out after ") {
            self = .timedOut
        } else {
            return nil
        }
    }

    /// The cause named by a networking error's text (lowercased). A refusal is named first: NIO's description of a
    /// refused connection also lists its (empty) DNS errors.
    private init(error text: String) {
        let has = { (words: [String]) in words.contains { text.contains($0) } }
        if has(["refused (errno", "connection refused", "econnrefused"]) {
            self = .refused
        } else if has(["timed out", "timeout"]) {
            self = .timedOut
        } else if has(["ssl", "tls", "certificate", "handshake"]) {
            self = .tls
        } else if has([
            "socketaddresserror", "unknown(host", "name or service not known", "nodename nor servname",
            "name resolution", "no address associated", "could not resolve",
        ]) {
            self = .dns
        } else if has(["websocket upgrade"]) {
            self = .notADeployment
        } else if has(["reset"]) {
            self = .reset
        } else {
            self = .other
        }
    }

    package var description: String { rawValue }
}
