/// Answers one request, exactly once, from any thread or task.
///
/// Respond (or start a stream) before the handler returns to answer on the libmicrohttpd thread
/// (at once). Otherwise keep the responder and answer later, e.g. from a `Task`: the
/// connection is suspended meanwhile (no CPU, no idle timeout) and resumed by the answer.
/// If the last reference to a responder goes away without an answer, the client gets
/// ``HTTPServerRejection/noResponse`` (500). During shutdown a pending read (``HTTPServerConfiguration/onlyReads``)
/// gets ``HTTPServerRejection/shuttingDown`` (503) at once; any other pending request still gets its answer within
/// the grace period, else ``HTTPServerRejection/unansweredAtShutdown`` (502).
public final class HTTPResponder: Sendable {
    private let exchange: Exchange

    init(exchange: Exchange) {
        self.exchange = exchange
    }

    deinit {
        exchange.responderReleased()
    }

    /// Sends `response`.
    /// - Returns: `false` if the request was already answered or is over (the response is dropped).
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool {
        exchange.provide(.response(response))
    }

    /// Sends a prepared (shared, pre-built) response: no per-request copy of headers or body.
    /// - Returns: `false` if the request was already answered or is over.
    @discardableResult
    public func respond(_ response: HTTPPreparedResponse) -> Bool {
        exchange.provide(.prepared(response))
    }

    /// Sends a response built from its parts.
    /// - Returns: `false` if the request was already answered or is over.
    @discardableResult
    public func respond(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) -> Bool {
        respond(HTTPResponse(status: status, headers: headers, body: body))
    }

    /// Calls `handler` once, on a server thread, if the client closes the connection while the request still waits
    /// for its answer (at once if it already has): the moment to stop working on it. A later answer is refused. It
    /// must not block.
    public func onClientGone(_ handler: @escaping @Sendable () -> Void) {
        exchange.onAbandon(handler)
    }

    /// Starts a streaming response: `status` and `headers` go out at once, the body is chunked
    /// (`Transfer-Encoding: chunked` for HTTP/1.1 clients; close-delimited for HTTP/1.0) and
    /// written through the returned writer. For Server-Sent Events pass
    /// `Content-Type: text/event-stream`, `Cache-Control: no-store`, `X-Accel-Buffering: no`.
    /// - Returns: the writer, or `nil` if the request was already answered or is over.
    public func startStream(status: Int = 200, headers: HTTPHeaders) -> HTTPStreamWriter? {
        let writer = HTTPStreamWriter(connection: exchange.connection)
        guard exchange.provide(.stream(status: status, headers: headers, writer: writer)) else { return nil }
        return writer
    }
}

/// Handles a complete request. Called on a libmicrohttpd worker thread: it must not block or wait.
/// Answer through the ``HTTPResponder`` before returning (at once) or later from any thread/task.
public typealias HTTPHandler = @Sendable (HTTPRequest, HTTPResponder) -> Void
