import ConvexSyncProtocol
import ConvexValues
import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import Synchronization
import TimeSource

/// One sync-protocol WebSocket: a reader task decodes frames, a heartbeat task ticks every 5 s, and a single
/// driver loop owns the ``SyncSession`` and does all writing, so frames leave in protocol order.
///
/// Mutations run inside the driver loop, so a close requested by a test hook takes effect between whole
/// mutation round trips (response and Transition both sent, or the mutation not started).
final class SyncConnection: Sendable {
    enum Event: Sendable {
        case message(ClientMessage)
        case invalidFrame(String)
        case tooManyMutations
        case inboundClosed
        case wake
        case actionDone(requestId: UInt32, outcome: FunctionOutcome)
        case heartbeat
        case flush
        /// The user identity's `exp` may have passed.
        case expiryCheck
        case close(code: UInt16, reason: String?)
    }

    static let maxPendingMutations = 1000
    static let maxMessageSize = 1 << 25

    private let core: DeploymentCore
    private let stream: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let invalidatedTables = Mutex<Set<String>>([])
    private let pendingMutations = Atomic<Int>(0)
    /// Set once the client's side of the socket is closed (no more frames will come).
    private let inboundClosed = Atomic<Bool>(false)
    var isInboundClosed: Bool { inboundClosed.load(ordering: .acquiring) }
    let logger: Logger

    init(core: DeploymentCore, logger: Logger) {
        self.core = core
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    func post(_ event: Event) {
        continuation.yield(event)
    }

    /// Called inside a commit: remembers the written tables and wakes the driver once.
    func notifyCommit(tables: Set<String>) {
        let wasEmpty = invalidatedTables.withLock { pending in
            let empty = pending.isEmpty
            pending.formUnion(tables)
            return empty
        }
        if wasEmpty { continuation.yield(.wake) }
    }

    /// Serves the socket until either side closes it.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        core.register(self)
        defer {
            core.unregister(self)
            continuation.finish()
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                await self.readFrames(inbound)
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await self.core.clock.sleep(for: self.core.heartbeatInterval)
                    if Task.isCancelled { break }
                    self.post(.heartbeat)
                }
            }
            var driver = Driver(connection: self, core: core, outbound: outbound)
            for await event in stream {
                let keepGoing = await driver.handle(event)
                driver.armExpiryTimer()
                for work in driver.takeSpawned() { group.addTask(operation: work) }
                if !keepGoing { break }
            }
            driver.finish()
            group.cancelAll()
        }
    }

    private func readFrames(_ inbound: WebSocketInboundStream) async {
        do {
            for try await message in inbound.messages(maxSize: Self.maxMessageSize) {
                switch message {
                case .text(let text):
                    do {
                        let decoded = try ClientMessage(json: text)
                        if case .mutation = decoded {
                            if pendingMutations.add(1, ordering: .relaxed).newValue > Self.maxPendingMutations {
                                post(.tooManyMutations)
                                return
                            }
                        }
                        post(.message(decoded))
                    } catch {
                        post(.invalidFrame("Received invalid JSON message: \(error.message)"))
                        return
                    }
                case .binary:
                    post(.invalidFrame("Received a binary WebSocket message; the sync protocol uses text messages"))
                    return
                }
            }
        } catch {
            logger.debug("Sync socket read failed", metadata: ["error": "\(error)"])
        }
        inboundClosed.store(true, ordering: .releasing)
        post(.inboundClosed)
    }

    func mutationProcessed() {
        pendingMutations.subtract(1, ordering: .relaxed)
    }

    func takeInvalidatedTables() -> Set<String> {
        invalidatedTables.withLock { pending in
            let tables = pending
            pending = []
            return tables
        }
    }
}

/// A successful mutation whose completion the client may not have seen, and the caller it ran for.
private struct UnconfirmedMutation {
    var request: ClientMessage.FunctionRequest
    var caller: CallerIdentity
    var response: ServerMessage.MutationResponse
}

/// The driver loop's state: the session, the outbound writer and the write bookkeeping.
private struct Driver {
    let connection: SyncConnection
    let core: DeploymentCore
    let outbound: WebSocketOutboundWriter
    var spawned: [@Sendable () async -> Void] = []
    var session: SyncSession
    var clientTs: Double?
    var lastSend: Duration
    var heldWhileStalled: [ServerMessage] = []
    /// Successful mutations whose response, or the Transition after it, has not reached the socket yet; the
    /// client will resend them after a reconnect.
    var unconfirmed: [UInt32: UnconfirmedMutation] = [:]
    var isReconnect = false
    /// The identity expiry a timer is already set for.
    var expiryTimer: Double?

    init(connection: SyncConnection, core: DeploymentCore, outbound: WebSocketOutboundWriter) {
        self.connection = connection
        self.core = core
        self.outbound = outbound
        self.session = SyncSession(adminKey: core.adminKey)
        self.lastSend = core.clock.now
    }

    /// Returns false when the socket is finished.
    mutating func handle(_ event: SyncConnection.Event) async -> Bool {
        switch event {
        case .message(let message):
            if case .connect(let c) = message {
                clientTs = c.clientTs
                isReconnect = c.connectionCount > 0 || (c.lastCloseReason.map { $0 != "InitialConnect" } ?? false)
                if isReconnect, let reason = c.lastCloseReason { core.recordCloseReason(reason) }
            }
            if case .mutation = message { connection.mutationProcessed() }
            var user: Result<UserIdentity, AuthenticationError>? = nil
            if case .authenticate(let a) = message, case .user(let token) = a.token {
                do {
                    user = .success(try await core.verifier.identity(for: token, now: core.clock.wallSeconds))
                } catch {
                    user = .failure(error)
                }
            }
            let actions = session.receive(
                message, latestTs: core.store.latestTimestamp, now: core.clock.wallSeconds, user: user)
            return await perform(actions)
        case .invalidFrame(let text):
            return await perform(session.receiveInvalidFrame(text))
        case .tooManyMutations:
            session.close()
            return await perform([.close(code: 1013, reason: "TooManyConcurrentMutations")])
        case .inboundClosed:
            session.close()
            return false
        case .wake:
            let tables = connection.takeInvalidatedTables()
            if session.invalidate(tables: tables) { return await perform([.update]) }
            return true
        case .actionDone(let requestId, let outcome):
            let response = ServerMessage.ActionResponse(
                requestId: requestId, result: render(outcome), logLines: outcome.logLines)
            return await perform(session.actionCompleted(response))
        case .heartbeat:
            guard !core.isStalled else { return true }
            do {
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())))
                if core.clock.now - lastSend >= core.jsonPingAfter {
                    try await send(.ping)
                }
            } catch {
                return false
            }
            return true
        case .flush:
            guard !core.isStalled else { return true }
            let held = heldWhileStalled
            heldWhileStalled = []
            do {
                for message in held { try await send(message) }
            } catch {
                return false
            }
            return true
        case .expiryCheck:
            expiryTimer = nil
            return await perform(session.checkExpiry(now: core.clock.wallSeconds))
        case .close(let code, let reason):
            session.close()
            return await perform([.close(code: code, reason: reason)])
        }
    }

    /// Makes sure a timer posts ``SyncConnection/Event/expiryCheck`` when the current identity expires. A timer
    /// for an earlier identity may still fire; the session then finds nothing expired.
    mutating func armExpiryTimer() {
        guard let expiration = session.identityExpiration, expiration != expiryTimer else { return }
        expiryTimer = expiration
        let connection = self.connection
        let clock = core.clock
        // Rounded up to the next millisecond, plus one: the wall clock is a floating-point reading, and a timer that
        // woke a rounding error before `exp` would find nothing expired and never fire again.
        let reading = clock.read()
        let delay = Duration.milliseconds(Int64((max(0, expiration - reading.wallSeconds) * 1000).rounded(.up)) + 1)
        // The deadline is read now, from one reading of both clocks: a timer task that starts late still fires at
        // `exp`, and a clock that moves meanwhile does not push it later.
        let deadline = reading.now + delay
        spawned.append {
            try? await clock.sleep(until: deadline)
            if !Task.isCancelled { connection.post(.expiryCheck) }
        }
    }

    mutating func takeSpawned() -> [@Sendable () async -> Void] {
        defer { spawned = [] }
        return spawned
    }

    private func render(_ outcome: FunctionOutcome) -> ServerMessage.FunctionResult {
        switch outcome.result {
        case .success(let value): .success(value)
        case .failure(let e): .failure(message: e.clientMessage(requestId: makeRequestId()), errorData: e.errorData)
        }
    }

    private mutating func send(_ message: ServerMessage) async throws {
        if core.isStalled {
            heldWhileStalled.append(message)
            return
        }
        var message = message
        if case .transition(var t) = message {
            let nowNs = wallClockNanoseconds()
            t.serverTs = Int64(clamping: nowNs)
            if let clientTs, clientTs > 0 { t.clientClockSkew = (Double(nowNs) / 1_000_000 - clientTs).rounded() }
            message = .transition(t)
        }
        try await outbound.writeTextMessage(message.jsonText)
        lastSend = core.clock.now
        if case .transition = message { unconfirmed.removeAll() }
    }

    /// Performs the session's actions in order; false when the socket is done.
    private mutating func perform(_ actions: [SyncSession.Action]) async -> Bool {
        var queue = actions[...]
        while let action = queue.popFirst() {
            do {
                switch action {
                case .send(let message):
                    try await send(message)
                case .close(let code, let reason):
                    try? await outbound.close(WebSocketErrorCode(codeNumber: Int(code)), reason: reason)
                    return false
                case .update:
                    if let transition = evaluate() { try await send(transition) }
                case .runMutation(let request):
                    // The client has closed its side: it resends on its next socket every mutation it has no answer
                    // for, so one not started yet is left to that (run here as well, it could run twice).
                    if connection.isInboundClosed { return false }
                    let response = runMutation(request)
                    if case .success = response.result {
                        unconfirmed[request.requestId] = UnconfirmedMutation(
                            request: request, caller: session.caller, response: response)
                    }
                    queue = session.mutationCompleted(response)[...] + queue
                case .runAction(let request):
                    let caller = session.caller
                    let engine = core.engine
                    let connection = self.connection
                    spawned.append {
                        let outcome = await engine.runAction(path: request.udfPath, args: request.args, caller: caller)
                        connection.post(.actionDone(requestId: request.requestId, outcome: outcome))
                    }
                }
            } catch {
                connection.logger.debug("Sync socket write failed", metadata: ["error": "\(error)"])
                session.close()
                return false
            }
        }
        return session.phase != .closed
    }

    private func runMutation(_ request: ClientMessage.FunctionRequest) -> ServerMessage.MutationResponse {
        guard let sessionId = session.sessionId else { return runUnlessOrphaned(request) }
        return core.dedupe.runOnce(sessionId: sessionId, caller: session.caller, request: request) {
            runUnlessOrphaned(request)
        }
    }

    private func runUnlessOrphaned(_ request: ClientMessage.FunctionRequest) -> ServerMessage.MutationResponse {
        if isReconnect, let orphan = core.orphans.claim(request, caller: session.caller) {
            return orphan
        }
        let outcome = core.engine.runMutation(path: request.udfPath, args: request.args, caller: session.caller)
        return ServerMessage.MutationResponse(
            requestId: request.requestId, result: render(outcome),
            ts: (try? outcome.result.get()) != nil ? outcome.ts : nil, logLines: outcome.logLines)
    }

    /// The socket is done: mutations the client never saw completed become orphans a reconnecting client can claim.
    func finish() {
        for mutation in unconfirmed.values {
            core.orphans.add(request: mutation.request, caller: mutation.caller, response: mutation.response)
        }
    }

    /// Evaluates the dirty queries at one snapshot and builds the Transition.
    private mutating func evaluate() -> ServerMessage? {
        let snapshot = core.store.snapshot
        _ = session.invalidate(tables: connection.takeInvalidatedTables())
        var evaluations: [UInt32: QueryEvaluation] = [:]
        var reads: [UInt32: Set<String>] = [:]
        for pending in session.pendingEvaluations() {
            let outcome = core.engine.runQueryCached(
                path: pending.udfPath, args: pending.args, caller: session.caller, snapshot: snapshot,
                journal: QueryJournal(decoding: pending.journal))
            switch outcome.result {
            case .success(let value):
                evaluations[pending.queryId] = .updated(
                    value: value, logLines: outcome.logLines, journal: outcome.journal)
            case .failure(let e):
                // As in Convex: the journal of a run that failed before its `paginate` finished is none.
                evaluations[pending.queryId] = .failed(
                    errorMessage: Self.failureMessage(e, previous: session.subscriptions[pending.queryId]?.lastResult),
                    logLines: outcome.logLines, errorData: e.errorData, journal: outcome.journal)
            }
            reads[pending.queryId] = outcome.readTables
        }
        return session.completeUpdate(evaluations: evaluations, readTables: reads, ts: snapshot.ts)
    }

    /// A query's failure as its client sees it, with a Request ID of its own, as Convex gives every request: a
    /// fresh one, unless the query failed so before, whose message is kept so that an unchanged failure compares
    /// equal and is not sent again.
    static func failureMessage(_ error: FunctionCallError, previous: QueryEvaluation?) -> String {
        if case .failed(let message, _, _, _)? = previous, message.hasSuffix("] Server Error\n" + error.detail) {
            return message
        }
        return error.clientMessage(requestId: makeRequestId())
    }
}
