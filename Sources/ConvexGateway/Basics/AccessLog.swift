import Logging

/// Whether the gateway writes its access log (`--access-log`).
public enum AccessLogMode: String, Sendable, CaseIterable {
    case on
    case off
}

/// The access log: one line at `info` per answered request, and one more when an event stream ends.
///
/// A line holds the method, the route's template, the function, the status, the body's bytes, the duration, a request
/// id, the W3C trace and span ids (`trace_id`, `span_id`: Basics/TraceContext.swift), and whether the caller was
/// signed in; never a header's value, a token, a cookie, a ticket, an API key, the query string or the arguments. Whether lines are written is decided once (``isOn``), so that a gateway whose log
/// level leaves `info` out (or with `--access-log off`) builds nothing of a line on any request, the hot `GET`
/// included.
package struct AccessLog: Sendable {
    private let logger: Logger
    /// Lines are written: the access log is on and the logger's level admits `info`.
    package let isOn: Bool

    package init(logger: Logger, mode: AccessLogMode) {
        self.logger = logger
        isOn = mode == .on && logger.logLevel <= .info
    }

    /// A new request id: 16 hex digits, random, so that replicas' ids do not collide. The lines of one request (a
    /// stream's start and its end) carry the same one.
    package func requestID() -> String {
        var generator = SystemRandomNumberGenerator()
        let number = generator.next() as UInt64
        let digits = String(number, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Logs an answered request (for an event stream: its start).
    /// - Parameters:
    ///   - route: The route's template (`/query/{function}`), never the raw path.
    ///   - function: The function the request named, when its path parsed as one.
    ///   - bytes: The body's length as sent (after gzip).
    ///   - signedIn: Whether the caller was signed in; `nil` when the request was refused before its credentials were
    ///     read.
    package func answered(
        method: String, route: String, function: String?, status: Int, bytes: Int, duration: Duration,
        signedIn: Bool?, requestID: String, trace: RequestTrace? = nil
    ) {
        guard isOn else { return }
        var metadata: Logger.Metadata = [
            "http.method": "\(method)", "http.route": "\(route)", "http.status": "\(status)",
            "http.response.bytes": "\(bytes)", "duration.ms": "\(Self.milliseconds(duration))",
            "request.id": "\(requestID)",
        ]
        if let function { metadata["convex.function"] = "\(function)" }
        if let signedIn { metadata["caller"] = Self.caller(signedIn: signedIn) }
        trace?.addMetadata(to: &metadata)
        logger.info("Request answered", metadata: metadata)
    }

    /// Logs the end of an event stream, with how long it was open and how many events (heartbeats left out) it sent.
    package func streamEnded(
        route: String, function: String?, lifetime: Duration, events: Int, signedIn: Bool, requestID: String,
        trace: RequestTrace? = nil
    ) {
        guard isOn else { return }
        var metadata: Logger.Metadata = [
            "http.route": "\(route)", "stream.lifetime.ms": "\(Self.milliseconds(lifetime))",
            "stream.events": "\(events)", "request.id": "\(requestID)", "caller": Self.caller(signedIn: signedIn),
        ]
        if let function { metadata["convex.function"] = "\(function)" }
        trace?.addMetadata(to: &metadata)
        logger.info("Stream ended", metadata: metadata)
    }

    /// Whether the caller was signed in (by a token in `Authorization`, a stream ticket or the auth cookie).
    private static func caller(signedIn: Bool) -> Logger.MetadataValue {
        signedIn ? "signed-in" : "anonymous"
    }

    /// Milliseconds with three decimals (microseconds).
    private static func milliseconds(_ duration: Duration) -> String {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        let fraction = String(micros % 1000)
        return "\(micros / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
