/// What a request ends up as.
enum ExchangeOutcome: Sendable {
    case response(HTTPResponse)
    case prepared(HTTPPreparedResponse)
    case rejection(HTTPServerRejection)
    case stream(status: Int, headers: HTTPHeaders, writer: HTTPStreamWriter)

    var writer: HTTPStreamWriter? {
        if case .stream(_, _, let writer) = self { return writer }
        return nil
    }
}

/// The answer state of one request, without I/O.
///
/// The handler runs on the connection's libmicrohttpd thread (`handling`). A response or stream
/// provided meanwhile is queued by that thread when the handler returns. Otherwise the connection
/// is suspended (`suspended`); a later `provide` from any thread moves it to `resumed` and asks the
/// owner to resume, after which libmicrohttpd calls the access handler again and the owner queues
/// the outcome (`answered`). Shutdown ends streams and turns a pending read into a 503 at once; a pending
/// request that may change something (``finishesBeforeShutdown``) keeps waiting for its answer until the
/// shutdown's deadline, and only then gets ``HTTPServerRejection/unansweredAtShutdown``. A client
/// that hangs up while its request waits leaves it `abandoned`: the connection is resumed only to be
/// closed, and a later answer is refused.
struct ExchangeStateMachine: Sendable {
    enum State: Sendable {
        case handling(ExchangeOutcome?)
        case suspended
        case resumed(ExchangeOutcome)
        case answered(HTTPStreamWriter?)
        /// The client hung up before an answer was queued: close the connection when it resumes.
        case abandoned
        case completed
    }

    enum ProvideAction: Equatable {
        /// Stored; the libmicrohttpd thread queues it when the handler returns.
        case stored
        /// The owner must call `MHD_resume_connection` (under the lock).
        case resume
        /// Already answered or over: ignored.
        case rejected
    }

    enum QueueAction {
        /// Queue this outcome now; `endStream` = finish a stream at once (shutdown in progress).
        case queue(ExchangeOutcome, endStream: Bool)
        /// Suspend the connection (under the lock) until an outcome is provided.
        case suspend
        /// Close the connection without an answer (the client is gone); then call `onAbandon`, if any.
        case close(onAbandon: (@Sendable () -> Void)?)
        /// Called in a state where there is nothing to queue.
        case unexpected
    }

    enum HangUpAction {
        case none
        /// The owner must call `MHD_resume_connection` (under the lock) so that libmicrohttpd closes the connection.
        case resume(onAbandon: (@Sendable () -> Void)?)
        /// End this stream as a disconnect.
        case abortStream(HTTPStreamWriter)
    }

    enum ShutdownAction {
        case none
        case resume
        case finishStream(HTTPStreamWriter)
        /// The grace period is over and the stream is still open (its client reads too slowly to take its end): close
        /// it as a client that hung up would be, so that its connection is resumed and closed.
        case abortStream(HTTPStreamWriter)
    }

    private(set) var state: State = .handling(nil)
    private(set) var shutdownRequested = false
    /// The shutdown's grace period is over: nothing waits any more.
    private(set) var shutdownDeadlinePassed = false
    /// The request may change something (not ``HTTPServerConfiguration/onlyReads``): once its handler has run, its
    /// effect is unknown until its answer comes, so shutdown waits for that answer (up to its deadline) instead of
    /// refusing it.
    var finishesBeforeShutdown = false
    /// The client hung up (reported by the hang-up watcher).
    private(set) var clientGone = false
    /// Told once if the request is abandoned.
    private var abandonHandler: (@Sendable () -> Void)?

    /// Whether the request may outlive the handler call (so shutdown must know about it).
    var needsParking: Bool {
        switch state {
        case .handling(nil), .handling(.stream?): true
        default: false
        }
    }

    mutating func provide(_ outcome: ExchangeOutcome) -> ProvideAction {
        switch state {
        case .handling(nil):
            state = .handling(outcome)
            abandonHandler = nil
            return .stored
        case .suspended:
            state = .resumed(outcome)
            abandonHandler = nil
            return .resume
        case .handling(.some), .resumed, .answered, .abandoned, .completed:
            return .rejected
        }
    }

    /// Keeps `handler` to call if the client leaves before the answer; `false` if it already has (call it now).
    /// Once an answer is provided there is nothing to abandon: the handler is dropped (with whatever it holds).
    mutating func onAbandon(_ handler: @escaping @Sendable () -> Void) -> Bool {
        switch state {
        case .handling(nil), .suspended:
            abandonHandler = handler
            return true
        case .abandoned:
            return false
        case .completed where clientGone:
            return false
        case .handling(.some), .resumed, .answered, .completed:
            return true
        }
    }

    /// The client hung up.
    mutating func peerHungUp() -> HangUpAction {
        clientGone = true
        switch state {
        case .suspended:
            state = .abandoned
            defer { abandonHandler = nil }
            return .resume(onAbandon: abandonHandler)
        case .handling(.stream(_, _, let writer)?), .resumed(.stream(_, _, let writer)), .answered(let writer?):
            return .abortStream(writer)
        case .handling, .resumed, .answered, .abandoned, .completed:
            return .none
        }
    }

    mutating func handlerReturned() -> QueueAction {
        switch state {
        case .handling(let outcome?):
            state = .answered(outcome.writer)
            return .queue(outcome, endStream: shutdownRequested)
        case .handling(nil):
            if clientGone {
                state = .abandoned
                defer { abandonHandler = nil }
                return .close(onAbandon: abandonHandler)
            }
            if shutdownDeadlinePassed {
                state = .answered(nil)
                return .queue(
                    .rejection(finishesBeforeShutdown ? .unansweredAtShutdown : .shuttingDown), endStream: false)
            }
            if shutdownRequested && !finishesBeforeShutdown {
                state = .answered(nil)
                return .queue(.rejection(.shuttingDown), endStream: false)
            }
            state = .suspended
            return .suspend
        case .suspended, .resumed, .answered, .abandoned, .completed:
            return .unexpected
        }
    }

    /// libmicrohttpd called the access handler again after a resume.
    mutating func calledAfterResume() -> QueueAction {
        switch state {
        case .resumed(let outcome):
            state = .answered(outcome.writer)
            return .queue(outcome, endStream: shutdownRequested)
        case .abandoned:
            return .close(onAbandon: nil)
        case .handling, .suspended, .answered, .completed:
            return .unexpected
        }
    }

    /// A response was queued without the handler (early rejection).
    mutating func answeredEarly() {
        state = .answered(nil)
    }

    mutating func shutdown() -> ShutdownAction {
        shutdownRequested = true
        switch state {
        case .suspended where finishesBeforeShutdown:
            return .none
        case .suspended:
            state = .resumed(.rejection(.shuttingDown))
            return .resume
        case .resumed(.stream(_, _, let writer)), .answered(let writer?):
            return .finishStream(writer)
        case .handling, .resumed, .answered, .abandoned, .completed:
            return .none
        }
    }

    /// The shutdown's grace period is over: a request still waiting for its answer gets
    /// ``HTTPServerRejection/unansweredAtShutdown`` (or 503 if it changes nothing), and a stream still open is closed
    /// (a stream whose client stopped reading may hold its connection suspended with the rest of a chunk unsent, and
    /// libmicrohttpd must not be stopped with a suspended connection).
    mutating func shutdownDeadlineReached() -> ShutdownAction {
        shutdownRequested = true
        shutdownDeadlinePassed = true
        switch state {
        case .suspended:
            state = .resumed(.rejection(finishesBeforeShutdown ? .unansweredAtShutdown : .shuttingDown))
            return .resume
        case .resumed(.stream(_, _, let writer)), .answered(let writer?):
            return .abortStream(writer)
        case .handling, .resumed, .answered, .abandoned, .completed:
            return .none
        }
    }

    /// The request is over; returns the stream writer to close, if any.
    mutating func completed() -> HTTPStreamWriter? {
        defer {
            state = .completed
            abandonHandler = nil
        }
        switch state {
        case .handling(let outcome): return outcome?.writer
        case .resumed(let outcome): return outcome.writer
        case .answered(let writer): return writer
        case .suspended, .abandoned, .completed: return nil
        }
    }
}
