import CMicroHTTPDShim

#if canImport(Glibc)
    import Glibc
#endif

/// Settings of an ``HTTPServer``. Every property has a documented default.
public struct HTTPServerConfiguration: Sendable {
    /// Numeric bind address. Default `127.0.0.1`; `0.0.0.0` for every IPv4 interface,
    /// `::1` / `::` for IPv6 (host names are not resolved).
    public var host: String = "127.0.0.1"

    /// TCP port. Default `0`: an ephemeral port, readable from ``HTTPServer/port`` after start.
    public var port: UInt16 = 0

    /// Worker threads, each with its own epoll loop. Default: the number of active cores.
    public var threadPoolSize: Int = HTTPServerConfiguration.activeCoreCount

    /// Connections served normally. Default 10,000. Connections beyond it (up to
    /// `connectionLimit + connectionLimitHeadroom`) get ``HTTPServerRejection/connectionLimitReached``
    /// (503, `Connection: close`) instead of waiting unanswered in the listen backlog. Raise
    /// `ulimit -n` to match.
    public var connectionLimit: Int = 10_000

    /// Extra connections libmicrohttpd accepts above ``connectionLimit`` only to answer them with 503.
    /// Default 128. libmicrohttpd splits its hard limit evenly across the worker threads.
    public var connectionLimitHeadroom: Int = 128

    /// Memory pool per connection in bytes: request line, headers and the response write buffer share it.
    /// Default 16 KiB. A request whose header block does not fit gets 431 (URL: 414) from libmicrohttpd; one whose
    /// `Cookie` field libmicrohttpd cannot copy into it gets ``HTTPServerRejection/headerFieldsTooLarge``.
    public var connectionMemoryLimit: Int = 16 * 1024

    /// Seconds a connection may stay idle (no bytes either way) before it is closed. Default 60; 0 = never.
    /// Suspended connections (idle streams, pending deferred responses) are exempt.
    public var idleTimeoutSeconds: Int = 60

    /// Largest accepted request body in bytes. Default 1 MiB. A larger `Content-Length` is answered
    /// with 413 before the body is read; a chunked body that grows past it is read, discarded and
    /// answered with 413.
    public var maxBodySize: Int = 1 << 20

    /// The most request-body bytes the server holds at once, over every connection. Default `nil`: no bound. A body
    /// whose `Content-Length` does not fit beside the bytes held now is answered with
    /// ``HTTPServerRejection/bodiesInFlightLimitReached`` (503, `Connection: close`) before it is read; one whose
    /// bytes stop fitting as they arrive (it declared no length, or others took the room meanwhile) is read,
    /// discarded and answered the same. A body's bytes count from the moment they are buffered until its request is
    /// over, whatever ends it. Must be at least ``maxBodySize``.
    public var maxBodyBytesInFlight: Int? = nil

    /// The most request-body bytes one client address may hold at once: its share of ``maxBodyBytesInFlight`` (it
    /// also applies without that bound). Default `nil`: no share. A body that does not fit beside the bytes its address
    /// holds now is refused as one over the bound is, with ``HTTPServerRejection/bodyShareReached`` (429): before it is
    /// read when its `Content-Length` says so (connection closed), else read, discarded and answered. An address is an
    /// IPv4 address, or the /64 network of an IPv6 one; behind a proxy every client shares the proxy's. Must be at
    /// least ``maxBodySize``.
    public var maxBodyBytesPerAddress: Int? = nil

    /// The most connections one client address may hold open at once (IPv4 address, or the /64 network of an IPv6
    /// one). Default `nil`: no share. A connection beyond it is answered at its accept with
    /// ``HTTPServerRejection/tooManyConnectionsFromAddress`` (429), the bytes written by the server itself, and shut
    /// down: it does not wait for a request, counts against no share, and leaves as libmicrohttpd closes it. Behind a
    /// proxy every client shares the proxy's address. At least 1.
    public var maxConnectionsPerAddress: Int? = nil

    /// How long a connection has, from its accept, to send its first request's line and every header field. Default
    /// `nil`: no limit but the idle timeout, which every byte restarts (a client that sends a header line now and
    /// then holds a connection for ever). Past it the client gets ``HTTPServerRejection/requestTimeout`` (408), the
    /// bytes written by the server itself as libmicrohttpd cannot answer a request whose head has not arrived, and the
    /// connection is closed. Later requests on a keep-alive connection are left to ``idleTimeoutSeconds``. Checked
    /// about every half second, so a client may get up to that much more. Above zero.
    public var headerTimeout: Duration? = nil

    /// The least progress a request body must make: at least `bytes` in every window of `per`, the first window from
    /// the request's head, until the whole body has arrived. Default `nil`: none, and a body that trickles in under
    /// the idle timeout holds its bytes of ``maxBodyBytesInFlight`` as long as it likes. A body that falls behind is
    /// answered with ``HTTPServerRejection/requestTimeout`` (408, written by the server itself), its connection closed
    /// and its bytes given back. Checked about every half second. `bytes` at least 1, `per` above zero.
    public var minimumBodyRate: (bytes: Int, per: Duration)? = nil

    /// How long ``HTTPServer/shutdown()`` waits for pending requests that may change something to get their
    /// answers (and for ended streams and refused requests to reach their clients) before stopping the daemon.
    /// Default 5 s.
    public var shutdownGracePeriod: Duration = .seconds(5)

    /// Whether a request only reads (its `method` and path): shutdown refuses such a request still waiting for its
    /// answer at once with ``HTTPServerRejection/shuttingDown``, where a request that may change something waits for
    /// its answer through the grace period. Default: `GET`, `HEAD` and `OPTIONS`.
    public var onlyReads: @Sendable (_ method: String, _ path: String) -> Bool = { method, _ in
        method == "GET" || method == "HEAD" || method == "OPTIONS"
    }

    /// The last bytes written to each stream that shutdown ends, before its end (called once per stream): for Server-
    /// Sent Events, a `retry:` field, so that clients connect again (to another replica) at once. Default none.
    public var streamFarewell: (@Sendable () -> [UInt8])? = nil

    /// Listen backlog. Default `nil` (libmicrohttpd's default, `SOMAXCONN`).
    public var listenBacklog: Int? = nil

    /// Use libmicrohttpd's `MHD_USE_TURBO` (skips some `shutdown()` calls). Default `false`.
    public var turbo: Bool = false

    /// Answers a request from its head alone, before the server builds the ``HTTPRequest`` and calls the
    /// handler: the hot path, for a few hot, unchanging answers. Called on the libmicrohttpd thread
    /// once the request (and any body, which it does not see) has arrived; it must not block.
    /// Return `nil` to hand the request to the handler as usual. Default `nil`.
    public var hotPath: (@Sendable (HTTPRequestHead) -> HTTPPreparedResponse?)? = nil

    /// Decides, from the request line and header fields alone, whether a request that carries a body (a
    /// `Content-Length` above 0, or a `Transfer-Encoding`) may send it. Called on the libmicrohttpd thread before a
    /// byte of the body is read or counted against ``maxBodyBytesInFlight``; it must not block. Return a response to
    /// refuse the request: it is sent with `Connection: close`, the body is never read, and the request holds nothing.
    /// Return `nil` to read the body and call the handler, whose ``HTTPRequest/admittedFromHead`` is then `true`.
    /// Default `nil`: every body is read.
    public var admission: (@Sendable (HTTPRequestHead) -> HTTPResponse?)? = nil

    /// Builds the response for requests the server answers itself (limits, shutdown, dropped responders).
    /// Default: a `text/plain` body with ``HTTPServerRejection/message``.
    public var rejectionResponse: @Sendable (HTTPServerRejection) -> HTTPResponse = { rejection in
        HTTPResponse(
            status: rejection.status,
            headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: rejection.message + "\n"
        )
    }

    /// Creates the default configuration.
    public init() {}

    /// Creates a configuration bound to `host`:`port` with the other defaults.
    public init(host: String, port: UInt16 = 0) {
        self.host = host
        self.port = port
    }

    /// The number of cores available to the process (at least 1): the CPUs of its affinity mask (`taskset`, a
    /// container's `--cpuset-cpus`), at most its cgroup CPU quota (a container's `--cpus`). Not the machine's count:
    /// a gateway held to one CPU of a large host would otherwise start a thread per host core.
    /// Whether `host` is an address ``host`` takes: numeric IPv4 or IPv6 (a server binds no names).
    public static func isNumericAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    public static var activeCoreCount: Int {
        max(1, Int(cmhd_available_cpus()))
    }
}

/// A request the server answers itself, without calling the handler (or after the handler failed to).
/// Its response is built by ``HTTPServerConfiguration/rejectionResponse``.
public struct HTTPServerRejection: Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case ambiguousBodyLength
        case invalidFieldName
        case obsoleteLineFolding
        case invalidCharacterInHead
        case invalidTransferEncoding
        case unsupportedTransferCoding
        case invalidContentLength
        case headerFieldsTooLarge
        case connectionLimitReached
        case bodiesInFlightLimitReached
        case payloadTooLarge
        case shuttingDown
        case unansweredAtShutdown
        case noResponse
        case requestTimeout
        case tooManyConnectionsFromAddress
        case bodyShareReached
    }

    private let code: Code

    /// The HTTP status the server uses.
    public var status: Int {
        switch code {
        case .ambiguousBodyLength, .invalidFieldName, .obsoleteLineFolding, .invalidCharacterInHead,
            .invalidTransferEncoding, .invalidContentLength:
            400
        case .unsupportedTransferCoding: 501
        case .headerFieldsTooLarge: 431
        case .connectionLimitReached, .bodiesInFlightLimitReached, .shuttingDown: 503
        case .payloadTooLarge: 413
        case .unansweredAtShutdown: 502
        case .noResponse: 500
        case .requestTimeout: 408
        case .tooManyConnectionsFromAddress, .bodyShareReached: 429
        }
    }

    /// A short human-readable explanation.
    public var message: String {
        switch code {
        case .ambiguousBodyLength:
            "The request's body length is ambiguous: Content-Length with Transfer-Encoding, or Content-Lengths that "
                + "differ."
        case .invalidFieldName:
            "A header field's name is empty or has a character no field name may have, such as whitespace before "
                + "its colon."
        case .obsoleteLineFolding:
            "A header field's value is folded onto a continuation line (obsolete line folding); send each field on "
                + "one line."
        case .invalidCharacterInHead: "The request line or a header field contains a NUL byte or a bare CR."
        case .invalidTransferEncoding:
            "The request's body length cannot be determined: its Transfer-Encoding must be chunked alone (one field, "
                + "chunked once and last)."
        case .unsupportedTransferCoding:
            "The request's Transfer-Encoding names a coding the server does not implement; it reads chunked alone."
        case .invalidContentLength: "The request's Content-Length is not a decimal number."
        case .headerFieldsTooLarge: "The request's header fields are too large for the server."
        case .connectionLimitReached: "The server has reached its connection limit; retry later."
        case .bodiesInFlightLimitReached: "The server holds as many request bodies as it may at once; retry shortly."
        case .payloadTooLarge: "The request body is larger than the server accepts."
        case .shuttingDown: "The server is shutting down."
        case .unansweredAtShutdown:
            "The server stopped before this request's answer was ready; what the request did is unknown."
        case .noResponse: "The request handler did not produce a response."
        case .requestTimeout: "The request was not sent in time: its head took too long, or its body came too slowly."
        case .tooManyConnectionsFromAddress:
            "This client address holds as many connections as the server allows one address; close one or retry later."
        case .bodyShareReached:
            "This client address holds as many request-body bytes as the server allows one address; retry once its "
                + "other requests are answered."
        }
    }

    /// A stable identifier: `ambiguous_body_length`, `invalid_field_name`, `obsolete_line_folding`,
    /// `invalid_character_in_head`, `invalid_transfer_encoding`, `unsupported_transfer_coding`,
    /// `invalid_content_length`, `header_fields_too_large`, `connection_limit`, `bodies_in_flight_limit`,
    /// `payload_too_large`, `shutting_down`, `unanswered_at_shutdown`, `no_response`, `request_timeout`,
    /// `too_many_connections_from_address`, `body_share_reached`.
    public var identifier: String {
        switch code {
        case .ambiguousBodyLength: "ambiguous_body_length"
        case .invalidFieldName: "invalid_field_name"
        case .obsoleteLineFolding: "obsolete_line_folding"
        case .invalidCharacterInHead: "invalid_character_in_head"
        case .invalidTransferEncoding: "invalid_transfer_encoding"
        case .unsupportedTransferCoding: "unsupported_transfer_coding"
        case .invalidContentLength: "invalid_content_length"
        case .headerFieldsTooLarge: "header_fields_too_large"
        case .connectionLimitReached: "connection_limit"
        case .bodiesInFlightLimitReached: "bodies_in_flight_limit"
        case .payloadTooLarge: "payload_too_large"
        case .shuttingDown: "shutting_down"
        case .unansweredAtShutdown: "unanswered_at_shutdown"
        case .noResponse: "no_response"
        case .requestTimeout: "request_timeout"
        case .tooManyConnectionsFromAddress: "too_many_connections_from_address"
        case .bodyShareReached: "body_share_reached"
        }
    }

    public var description: String { "\(identifier) (\(status)): \(message)" }

    /// The request gives its body's length two ways: `Content-Length` with `Transfer-Encoding`, or `Content-Length`
    /// fields that differ (400, connection closed). libmicrohttpd 0.9.75 would read the body by one of them, and a
    /// proxy in front that read it by the other would take the rest for a second request (request smuggling).
    public static let ambiguousBodyLength = Self(code: .ambiguousBodyLength)
    /// A header field's name is empty or has a byte that is not a `tchar` (RFC 9110 §5.6.2), such as the space in
    /// `Transfer-Encoding : chunked` (400, connection closed). libmicrohttpd 0.9.75 keeps the space in the name, so the
    /// server would not see the field a proxy in front may honour (RFC 9112 §5.1: a server must refuse whitespace
    /// between a field name and its colon with 400).
    public static let invalidFieldName = Self(code: .invalidFieldName)
    /// A header field continues on a line that starts with whitespace (obsolete line folding, RFC 9112 §5.2), which
    /// libmicrohttpd 0.9.75 joins to the field's name, not its value (400, connection closed).
    public static let obsoleteLineFolding = Self(code: .obsoleteLineFolding)
    /// The request line or a header field holds a NUL byte, or a CR not followed by LF (400, connection closed).
    /// libmicrohttpd 0.9.75 ends a value at its first NUL, so `X-API-Key: right\0wrong` would read as `right`.
    public static let invalidCharacterInHead = Self(code: .invalidCharacterInHead)
    /// The request's `Transfer-Encoding` does not end with `chunked`, names it twice, or is not the one field value
    /// `chunked` libmicrohttpd reads (400, connection closed): its body's length cannot be determined (RFC 9112 §6.3).
    public static let invalidTransferEncoding = Self(code: .invalidTransferEncoding)
    /// The request's `Transfer-Encoding` ends with `chunked` but names another coding too, such as `gzip, chunked`
    /// (501, connection closed): the server decodes none but chunked (RFC 9112 §6.1).
    public static let unsupportedTransferCoding = Self(code: .unsupportedTransferCoding)
    /// The request's `Content-Length` is not a decimal number (400, connection closed). libmicrohttpd refuses it itself;
    /// the server writes this answer in place of libmicrohttpd's (which 0.9.75 sends twice).
    public static let invalidContentLength = Self(code: .invalidContentLength)
    /// The request's header fields do not fit the connection's memory as libmicrohttpd parses them, such as a large
    /// `Cookie` field, which it copies (431, connection closed; see ``HTTPServerConfiguration/connectionMemoryLimit``).
    public static let headerFieldsTooLarge = Self(code: .headerFieldsTooLarge)
    /// More connections are open than ``HTTPServerConfiguration/connectionLimit`` (503, connection closed).
    public static let connectionLimitReached = Self(code: .connectionLimitReached)
    /// The request bodies held at once would exceed ``HTTPServerConfiguration/maxBodyBytesInFlight`` (503).
    public static let bodiesInFlightLimitReached = Self(code: .bodiesInFlightLimitReached)
    /// The body exceeds ``HTTPServerConfiguration/maxBodySize``, or its `Content-Length` is too large for libmicrohttpd
    /// to read (413).
    public static let payloadTooLarge = Self(code: .payloadTooLarge)
    /// A request arrived during shutdown, or a deferred read (``HTTPServerConfiguration/onlyReads``) was
    /// still pending when shutdown began (503): its handler was not called, or its answer could only be a read, so
    /// the client may send it again, elsewhere.
    public static let shuttingDown = Self(code: .shuttingDown)
    /// A deferred request that may change something was still waiting for its answer when the shutdown's grace
    /// period ended (502): its handler ran, so what it did is unknown.
    public static let unansweredAtShutdown = Self(code: .unansweredAtShutdown)
    /// The handler released its ``HTTPResponder`` without responding (500).
    public static let noResponse = Self(code: .noResponse)
    /// The connection's first request head did not arrive within ``HTTPServerConfiguration/headerTimeout``, or a body
    /// fell behind ``HTTPServerConfiguration/minimumBodyRate`` (408, written on the socket by the server itself,
    /// connection closed).
    public static let requestTimeout = Self(code: .requestTimeout)
    /// The client's address already holds ``HTTPServerConfiguration/maxConnectionsPerAddress`` connections (429,
    /// written at the accept by the server itself, connection closed).
    public static let tooManyConnectionsFromAddress = Self(code: .tooManyConnectionsFromAddress)
    /// The body does not fit beside what the client's address holds (``HTTPServerConfiguration/maxBodyBytesPerAddress``)
    /// (429): the limit is the client's own, where ``bodiesInFlightLimitReached`` is everyone's.
    public static let bodyShareReached = Self(code: .bodyShareReached)
}
