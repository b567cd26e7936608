import CMicroHTTPD
import CMicroHTTPDShim
import Logging
import Synchronization

/// One request on one connection, from the first access-handler call to the completion callback.
///
/// Retained in libmicrohttpd's per-request context pointer (`*con_cls`), released in the
/// completion callback. A request the hot path answers gets none (see `hotPathMarker`).
/// The `var`s are only touched on the connection's libmicrohttpd thread; `machine` is shared with
/// responders and shutdown.
final class Exchange: @unchecked Sendable {
    let server: HTTPServer
    let connection: ConnectionHandle
    private let machine = Mutex(ExchangeStateMachine())

    /// The request-target exactly as sent (see ``HTTPRequestHead/target``).
    let target: String?
    /// Whether the hot path has already seen (and declined) this request.
    let hotPathTried: Bool
    /// The connection's context when the server guards connections (``ConnectionGuard``), else `nil`.
    let guarded: ConnectionContext?
    /// The client address whose share of ``HTTPServerConfiguration/maxBodyBytesPerAddress`` the body counts against.
    var addressKey: ClientAddressKey? { guarded?.addressKey }

    // libmicrohttpd-thread only:
    var body: [UInt8] = []
    var bodyTooLarge = false
    /// The body's bytes stopped fitting the server's bound on bodies in flight, or its address's share of it:
    /// discarded, answered with this.
    var bodyRefusal: HTTPServerRejection?
    /// The body bytes this request holds of the server's budget, given back when the request is over.
    var bodyBytesHeld = 0
    var handlerInvoked = false
    var isParked = false
    /// The hang-up watch on this request's socket while it is parked.
    var hangUpWatch: HangUpWatcher.Watch?
    /// Whether the request is HTTP/1.1: a streamed answer is then chunked, and may be written directly.
    var chunkedStream = false
    /// Whether ``HTTPServerConfiguration/admission`` admitted the request before its body was read.
    var admittedFromHead = false

    init(server: HTTPServer, connection: ConnectionHandle, target: String?, hotPathTried: Bool = false) {
        self.server = server
        self.connection = connection
        self.target = target
        self.hotPathTried = hotPathTried
        guarded = server.connectionGuard != nil ? connection.context : nil
    }

    /// Runs `body` on the state machine under its lock. A ThreadSanitizer build also tells the sanitizer that each
    /// holder of the lock happens after the one before: Synchronization.Mutex hands a contended lock over in the
    /// kernel, out of the sanitizer's sight, and what one thread stores here (a stream's writer, made on the
    /// handler's thread) is used by the next holder outside the lock (docs/testing.md, "Sanitizers").
    private func withMachine<Result: Sendable>(_ body: (inout ExchangeStateMachine) -> Result) -> Result {
        machine.withLock { machine in
            #if THREAD_SANITIZER
                let address = Unmanaged.passUnretained(self).toOpaque()
                cmhd_tsan_acquire(address)
                defer { cmhd_tsan_release(address) }
            #endif
            return body(&machine)
        }
    }

    // MARK: Any thread

    /// Stores or delivers an outcome; `false` if the request was already answered or is over.
    func provide(_ outcome: ExchangeOutcome) -> Bool {
        withMachine { machine in
            switch machine.provide(outcome) {
            case .stored:
                return true
            case .resume:
                MHD_resume_connection(connection.raw)
                return true
            case .rejected:
                return false
            }
        }
    }

    func responderReleased() {
        if provide(.rejection(.noResponse)) {
            server.logger.error("HTTP handler released its responder without answering")
        }
    }

    /// Calls `handler` once if the client leaves while the request waits for its answer (at once if it already has).
    func onAbandon(_ handler: @escaping @Sendable () -> Void) {
        if !withMachine({ $0.onAbandon(handler) }) { handler() }
    }

    /// The hang-up watcher's thread: the client closed its side of the connection.
    func peerHungUp() {
        let action = withMachine { machine -> ExchangeStateMachine.HangUpAction in
            let action = machine.peerHungUp()
            if case .resume = action {
                MHD_resume_connection(connection.raw)
            }
            return action
        }
        switch action {
        case .none:
            break
        case .resume(let onAbandon):
            onAbandon?()
        case .abortStream(let writer):
            writer.peerHungUp()
        }
    }

    /// Shutdown: answer a pending deferred read with 503, end a stream cleanly; a request that may change something
    /// keeps waiting for its answer (see ``shutdownDeadlineReached()``).
    func shutdown() {
        shutdownStep { $0.shutdown() }
    }

    /// The shutdown's grace period is over: a request still waiting for its answer is answered now.
    func shutdownDeadlineReached() {
        shutdownStep { $0.shutdownDeadlineReached() }
    }

    /// Moves the state machine by one shutdown step, resuming the connection under the lock when it says so.
    private func shutdownStep(_ step: (inout ExchangeStateMachine) -> ExchangeStateMachine.ShutdownAction) {
        let action = withMachine { machine -> ExchangeStateMachine.ShutdownAction in
            let action = step(&machine)
            if case .resume = action {
                MHD_resume_connection(connection.raw)
            }
            return action
        }
        perform(action)
    }

    private func perform(_ action: ExchangeStateMachine.ShutdownAction) {
        switch action {
        case .finishStream(let writer): finishForShutdown(writer)
        case .abortStream(let writer): writer.peerHungUp()
        case .none, .resume: break
        }
    }

    /// Ends a stream because the server is shutting down, after its farewell
    /// (``HTTPServerConfiguration/streamFarewell``).
    private func finishForShutdown(_ writer: HTTPStreamWriter) {
        if let farewell = server.configuration.streamFarewell {
            _ = writer.write(farewell())
        }
        writer.finishForShutdown()
    }

    // MARK: libmicrohttpd thread

    /// Answers a request whose head is refused (``RequestHeadCheck``) at its first call, and closes the connection
    /// after the answer: its body, if any, is never read.
    func refuse(_ rejection: HTTPServerRejection) -> MHD_Result {
        queueEarly(rejection)
    }

    func firstCall(method: UnsafePointer<CChar>?) -> MHD_Result {
        if server.connectionLimitExceeded {
            return queueEarly(.connectionLimitReached)
        }
        let lengthText = MHD_lookup_connection_value(connection.raw, MHD_ValueKind.HEADER_KIND, "Content-Length")
        if let admission = server.configuration.admission, carriesBody(declaredLength: lengthText) {
            let head = HTTPRequestHead(
                connection: connection, method: method.map { String(cString: $0) } ?? "", target: target)
            if let refusal = admission(head) {
                // Refused from its head: the body is never read, so the connection closes after the answer.
                withMachine { $0.answeredEarly() }
                var response = refusal
                response.headers.replaceOrAdd(name: "Connection", value: "close")
                return queue(response)
            }
            admittedFromHead = true
        }
        if let lengthText {
            let declared = UInt64(String(cString: lengthText))
            if let declared, declared > UInt64(server.configuration.maxBodySize) {
                return queueEarly(.payloadTooLarge)
            }
            if let declared, declared > 0 {
                // Refused before it is read when it cannot fit beside the bodies held now.
                if let refusal = server.admitsBody(declared: Int(declared), from: addressKey).rejection {
                    return queueEarly(refusal)
                }
                // Bounded: a client may declare a large body and never send it.
                body.reserveCapacity(Int(min(declared, 64 * 1024)))
            }
        }
        if let guarded, let connectionGuard = server.connectionGuard, connectionGuard.timesBodies,
            carriesBody(declaredLength: lengthText)
        {
            connectionGuard.bodyStarted(guarded)
        }
        return MHD_Result.YES
    }

    /// Whether the request sends a body: a `Content-Length` other than 0, or a `Transfer-Encoding`.
    private func carriesBody(declaredLength: UnsafePointer<CChar>?) -> Bool {
        if let declaredLength { return UInt64(String(cString: declaredLength)) != 0 }
        return MHD_lookup_connection_value(connection.raw, MHD_ValueKind.HEADER_KIND, "Transfer-Encoding") != nil
    }

    /// Buffers a piece of the body, counted against the server's bound on bodies in flight and its address's share of
    /// it; a body too large, or whose bytes no longer fit, is discarded (and what it held given back) as the rest
    /// arrives. Every piece counts as the body's progress (``HTTPServerConfiguration/minimumBodyRate``).
    func receiveBody(_ chunk: UnsafeRawBufferPointer) {
        if let guarded {
            // Discarded bytes count as progress too: the client is sending them.
            server.connectionGuard?.bodyReceived(guarded, count: chunk.count)
        }
        guard !bodyTooLarge, bodyRefusal == nil else { return }
        if body.count + chunk.count > server.configuration.maxBodySize {
            bodyTooLarge = true
            discardBody()
            return
        }
        if let refusal = server.takeBodyBytes(chunk.count, from: addressKey).rejection {
            bodyRefusal = refusal
            discardBody()
            return
        }
        bodyBytesHeld += chunk.count
        body.append(contentsOf: chunk)
    }

    /// Drops the body buffered so far and gives its bytes back.
    private func discardBody() {
        body = []
        server.releaseBodyBytes(bodyBytesHeld, from: addressKey)
        bodyBytesHeld = 0
    }

    func finalCall(
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?
    ) -> MHD_Result {
        if handlerInvoked {
            let action = withMachine { $0.calledAfterResume() }
            return perform(action)
        }
        handlerInvoked = true
        if let guarded, server.connectionGuard?.bodyEnded(guarded) == false {
            // The body came too slowly and the server has answered 408 on the socket itself: close, and the
            // completion gives back what the body held.
            return MHD_Result.NO
        }
        if bodyTooLarge {
            return queueEarly(.payloadTooLarge, closing: false)
        }
        if let bodyRefusal {
            return queueEarly(bodyRefusal, closing: false)
        }
        if server.isShuttingDown {
            // Refused before its handler runs: nothing was done, so the client may send it again, elsewhere.
            body = []
            return queueEarly(.shuttingDown, closing: false)
        }
        if !hotPathTried, let prepared = server.hotAnswer(connection, method: method, target: target) {
            body = []
            withMachine { $0.answeredEarly() }
            return prepared.queue(on: connection)
        }
        let request = makeRequest(url: url, method: method, version: version)
        chunkedStream = request.version == "HTTP/1.1"
        body = []
        let onlyReads = server.configuration.onlyReads(request.method, request.path)
        withMachine { $0.finishesBeforeShutdown = !onlyReads }
        server.handler(request, HTTPResponder(exchange: self))
        return handlerReturned()
    }

    private func handlerReturned() -> MHD_Result {
        let (needsParking, finishes) = withMachine { ($0.needsParking, $0.finishesBeforeShutdown) }
        if needsParking && !isParked {
            switch server.park(self, finishesBeforeShutdown: finishes) {
            case .parked:
                isParked = true
                hangUpWatch = server.hangUpWatcher.watch(self)
            case .shuttingDown:
                // Shutdown started while the handler ran: a read must neither suspend nor stream on.
                _ = withMachine { $0.shutdown() }
            case .pastDeadline:
                _ = withMachine { $0.shutdownDeadlineReached() }
            }
        }
        let action = withMachine { machine -> ExchangeStateMachine.QueueAction in
            let action = machine.handlerReturned()
            if case .suspend = action {
                // Under the lock, so a concurrent provide() sees `suspended` only once it is true.
                MHD_suspend_connection(connection.raw)
            }
            return action
        }
        return perform(action)
    }

    private func perform(_ action: ExchangeStateMachine.QueueAction) -> MHD_Result {
        switch action {
        case .suspend:
            return MHD_Result.YES
        case .close(let onAbandon):
            onAbandon?()
            return MHD_Result.NO
        case .unexpected:
            server.logger.error("libmicrohttpd called the access handler in an unexpected state")
            return MHD_Result.NO
        case .queue(.response(let response), _):
            return queue(response)
        case .queue(.prepared(let prepared), _):
            return prepared.queue(on: connection)
        case .queue(.rejection(let rejection), _):
            return queue(server.configuration.rejectionResponse(rejection))
        case .queue(.stream(let status, let headers, let writer), let endStream):
            if endStream { finishForShutdown(writer) }
            return queueStream(status: status, headers: headers, writer: writer)
        }
    }

    func completed(_ code: MHD_RequestTerminationCode) {
        // The body, and what the handler made of it, is no longer held for this request.
        server.releaseBodyBytes(bodyBytesHeld, from: addressKey)
        bodyBytesHeld = 0
        if let hangUpWatch {
            server.hangUpWatcher.unwatch(hangUpWatch)
            self.hangUpWatch = nil
        }
        if isParked {
            server.unpark(self)
        }
        guard let writer = withMachine({ $0.completed() }) else { return }
        server.streamEnded()
        let reason: HTTPStreamCloseReason =
            switch code {
            case MHD_RequestTerminationCode.REQUEST_TERMINATED_COMPLETED_OK: .finished
            case MHD_RequestTerminationCode.REQUEST_TERMINATED_TIMEOUT_REACHED: .timedOut
            case MHD_RequestTerminationCode.REQUEST_TERMINATED_DAEMON_SHUTDOWN: .serverShutdown
            default: .clientDisconnected
            }
        writer.requestEnded(reason)
    }

    // MARK: Queuing

    /// Answers `rejection` without the handler; `closing` closes the connection after it (the default: its request
    /// was not read to its end).
    private func queueEarly(_ rejection: HTTPServerRejection, closing: Bool = true) -> MHD_Result {
        withMachine { $0.answeredEarly() }
        var response = server.configuration.rejectionResponse(rejection)
        if closing { response.headers.replaceOrAdd(name: "Connection", value: "close") }
        return queue(response)
    }

    private func queue(_ response: HTTPResponse) -> MHD_Result {
        var response = response
        if !(100...999).contains(response.status) {
            server.logger.error(
                "HTTP handler answered with an invalid status",
                metadata: ["http.response.status_code": "\(response.status)"]
            )
            response = server.configuration.rejectionResponse(.noResponse)
        }
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                MHD_ResponseMemoryMode.RESPMEM_MUST_COPY
            )
        }
        guard let mhdResponse = created else {
            server.logger.error("libmicrohttpd could not create a response")
            return MHD_Result.NO
        }
        defer { MHD_destroy_response(mhdResponse) }
        guard addHeaders(response.headers, to: mhdResponse) else {
            // A header libmicrohttpd refused (e.g. containing CR/LF): answer 500 instead.
            let fallback = server.configuration.rejectionResponse(.noResponse)
            return queue(HTTPResponse(status: fallback.status, body: fallback.body))
        }
        return MHD_queue_response(connection.raw, UInt32(response.status), mhdResponse)
    }

    private func queueStream(status: Int, headers: HTTPHeaders, writer: HTTPStreamWriter) -> MHD_Result {
        let context = Unmanaged.passRetained(writer).toOpaque()
        guard
            let mhdResponse = MHD_create_response_from_callback(
                UInt64.max,  // MHD_SIZE_UNKNOWN: chunked for HTTP/1.1
                1024,
                streamReaderThunk,
                context,
                streamReaderFreeThunk
            )
        else {
            Unmanaged<HTTPStreamWriter>.fromOpaque(context).release()
            server.logger.error("libmicrohttpd could not create a streaming response")
            return MHD_Result.NO
        }
        defer { MHD_destroy_response(mhdResponse) }
        guard (100...999).contains(status), addHeaders(headers, to: mhdResponse) else {
            server.logger.error("HTTP handler started a stream with an invalid status or header")
            writer.finishForShutdown()
            return MHD_Result.NO
        }
        // Direct writes need the socket's writability reported, for the rest of a chunk it took only in part.
        if chunkedStream, let hangUpWatch, server.hangUpWatcher.watchWritable(hangUpWatch, for: writer) {
            writer.allowDirectWrites(socket: hangUpWatch.fd)
        }
        server.streamStarted()
        return MHD_queue_response(connection.raw, UInt32(status), mhdResponse)
    }

    private func addHeaders(_ headers: HTTPHeaders, to response: OpaquePointer) -> Bool {
        for field in headers where MHD_add_response_header(response, field.name, field.value) != MHD_Result.YES {
            server.logger.error(
                "libmicrohttpd refused a response header",
                metadata: ["http.header.name": "\(field.name)"]
            )
            return false
        }
        return true
    }

    // MARK: Request

    private func makeRequest(
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?
    ) -> HTTPRequest {
        var fields: [HTTPHeaders.Field] = []
        withUnsafeMutablePointer(to: &fields) { pointer in
            _ = MHD_get_connection_values_n(connection.raw, MHD_ValueKind.HEADER_KIND, headerIteratorThunk, pointer)
        }
        let remote = connection.remote
        return HTTPRequest(
            method: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "",
            target: target,
            version: version.map { String(cString: $0) } ?? "",
            headers: HTTPHeaders(fields: fields),
            body: body,
            remoteAddress: remote?.host,
            remotePort: remote?.port,
            admittedFromHead: admittedFromHead
        )
    }
}
