import Logging
import Synchronization

/// Tells the operator, once per origin at `notice`, that a browser page from another origin cannot use the gateway,
/// and names the flag that allows it: the browser shows its page only a generic CORS message and hides the gateway's
/// answer. With CORS on, the origin was refused (403 `OriginNotAllowed`); with CORS off, the gateway answers but the
/// browser lets no page of another origin read it (and refuses its preflights). At most ``limit`` origins are named,
/// so a client that makes up origins cannot fill the log or the memory.
final class RefusedOriginLog: Sendable {
    static let limit = 100
    private let logger: Logger
    private let named = Mutex<Set<String>>([])

    init(logger: Logger) {
        self.logger = logger
    }

    /// A request from `origin` was refused (`corsEnabled`), or came from another origin while CORS is off.
    func record(_ origin: String, corsEnabled: Bool) {
        enum Verdict { case new, known, full }
        let verdict = named.withLock { named -> Verdict in
            if named.contains(origin) { return .known }
            guard named.count < Self.limit else { return .known }
            named.insert(origin)
            return named.count == Self.limit ? .full : .new
        }
        guard verdict != .known else { return }
        let shown = printable(origin, limit: 100)
        if origin == "null" {
            logger.notice(
                "A page with origin 'null' (opened from a file, or a sandboxed frame) cannot use this gateway: serve the page over HTTP and name its origin in --cors-origins (GATEWAY_CORS_ORIGINS)"
            )
        } else if corsEnabled {
            logger.notice(
                "Refused a request from origin '\(shown)' (403 OriginNotAllowed): it is not in --cors-origins (GATEWAY_CORS_ORIGINS)"
            )
        } else {
            logger.notice(
                "A page from origin '\(shown)' cannot read this gateway's answers: CORS is off; allow it with --cors-origins '\(shown)' (GATEWAY_CORS_ORIGINS)"
            )
        }
        if verdict == .full {
            logger.notice("Named \(Self.limit) refused origins; further ones are not logged")
        }
    }
}
