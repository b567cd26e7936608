import ConvexSyncProtocol
import ConvexValues
import Foundation

typealias QueryID = UInt32
typealias RequestID = UInt32
typealias QueryResult = Result<ConvexValue, ConvexClientError>

/// One subscriber of a query: an iteration of a ``ConvexSubscription`` or a one-shot ``ConvexClient/query(_:with:)``.
struct SubscriberID: Hashable, Sendable, Comparable {
    let raw: UInt64
    static func < (a: SubscriberID, b: SubscriberID) -> Bool { a.raw < b.raw }
}

/// The client's whole sync-protocol state, with no I/O: the local query set, the versions of the current socket,
/// the request manager (mutations and actions), authentication and the connection phase.
///
/// The owner holds it under a lock, calls one of the `mutating` event methods, and acts on the returned
/// ``Effects`` (messages to send, in order; results for subscribers; finished calls). Messages are only
/// produced while ``phase`` is `connected`; while disconnected the state just records the change, and
/// ``connectionOpened()`` replays everything on the next socket: Connect, Authenticate, the whole query
/// set from version 0, then every unfinished request under the same session id (the server dedupes
/// mutations by `(sessionId, requestId)`).
struct SyncState {
    enum Phase: Hashable, Sendable {
        /// Nothing asked for a connection yet.
        case idle
        /// A socket is being opened.
        case connecting
        case connected
        /// The last socket ended; a new one is opened after a backoff.
        case waitingToReconnect
        /// The deployment rejected the credentials; no reconnect until they change.
        case authenticationFailed(String)
        case closed
    }

    /// Where the client's identity comes from.
    enum AuthSetting: Hashable, Sendable {
        case none
        case token(AuthenticationToken)
        /// A token-provider closure (held by the owner) is asked on every connect.
        case provider
    }

    struct QueryKey: Hashable {
        let path: String
        let args: [String: ConvexValue]
    }

    struct Query {
        let id: QueryID
        let key: QueryKey
        /// The path as the caller wrote it; sent on the wire.
        let udfPath: String
        let args: [String: ConvexValue]
        var subscribers: Set<SubscriberID> = []
        /// The latest result on any socket, `nil` until the first arrives.
        var result: QueryResult?
        var journal: String?
    }

    enum RequestKind: Hashable, Sendable {
        case mutation
        case action
    }

    enum RequestStatus: Hashable {
        /// Not on the current socket yet (new, or to be resent after a reconnect).
        case notSent
        case sent
        /// Succeeded; released once a Transition at or past `ts` has been applied (read-your-writes).
        case completed(ConvexValue, ts: ConvexTimestamp?)
    }

    struct Request {
        let kind: RequestKind
        let udfPath: String
        let args: [String: ConvexValue]
        var status: RequestStatus
    }

    /// What the owner must do after an event.
    struct Effects {
        /// Messages for the current socket, in this order.
        var send: [ClientMessage] = []
        /// New results for subscribers (deliver in this order, before leaving the lock).
        var deliveries: [(SubscriberID, QueryResult)] = []
        /// The server Transition applied by this event, with the queries whose result it changed.
        var transition: AppliedTransition?
        /// Finished mutations and actions.
        var completions: [(RequestID, QueryResult)] = []
        /// The commit timestamps of the successful mutations among ``completions``.
        var commitTimestamps: [RequestID: ConvexTimestamp] = [:]
        /// A connection is wanted and none is running or scheduled.
        var startConnection = false
        /// The socket must be dropped (protocol violation, FatalError, AuthError); the text is the close reason.
        var resetConnection: String?
        /// A backoff or authentication-failure wait should end now (credentials changed).
        var wakeConnectionLoop = false
        /// The deployment confirmed the provider's current token: plan its refresh (``planTokenRefresh(now:leeway:)``).
        var tokenConfirmed = false
    }

    /// A server Transition the client applied: the timestamp its view moved to and the queries whose result changed,
    /// in the order of the Transition's modifications.
    struct AppliedTransition {
        let ts: ConvexTimestamp
        var changed: [QueryID] = []
    }

    /// When to ask the token provider for a fresh token.
    struct TokenRefreshPlan: Hashable, Sendable {
        /// Identifies the plan; a timer whose plan was replaced does nothing.
        let generation: UInt64
        let delay: Duration
    }

    // MARK: Identity of this client

    /// One UUID for the client's whole life, so resent mutations are deduplicated by the server.
    let sessionId: String
    private(set) var phase: Phase = .idle
    /// Sockets opened so far (sent as `connectionCount`, the JS client's meaning).
    private(set) var connectionCount: UInt32 = 0
    private(set) var lastCloseReason: String = "InitialConnect"
    private(set) var maxObservedTimestamp: ConvexTimestamp?
    private(set) var backoff: Backoff
    /// True once any socket has been opened, so later sockets always rebuild the query set.
    private var hasConnectedBefore = false

    // MARK: Per-socket versions

    /// The server's view as of the last applied Transition.
    private(set) var remoteVersion = StateVersion.initial
    /// The latest query-set version sent on this socket.
    private(set) var querySetVersion: UInt32 = 0
    /// Authenticate messages sent on this socket.
    var identityVersion: UInt32 = 0

    // MARK: Query set

    private(set) var queries: [QueryID: Query] = [:]
    private var queryIDs: [QueryKey: QueryID] = [:]
    private var subscriberQuery: [SubscriberID: QueryID] = [:]
    private var nextQueryID: QueryID = 0

    // MARK: Requests

    private(set) var requests: [RequestID: Request] = [:]
    private var nextRequestID: RequestID = 0

    // MARK: Authentication

    private(set) var auth: AuthSetting = .none
    /// The token to authenticate with: the static one, or the provider's latest answer.
    var currentToken: AuthenticationToken?
    private var consecutiveAuthFailures = 0
    /// Set when the server rejected the credentials for good; applied when the socket closes.
    var pendingAuthFailure: String?
    /// Ask the provider for a fresh token on the next connect.
    private(set) var forceTokenRefresh = false
    /// Counts token refresh plans, so that only the latest one's timer acts.
    var refreshGeneration: UInt64 = 0
    /// The identity version (on this socket) whose confirmation already produced a refresh plan.
    var refreshPlannedFor: UInt32?

    init(sessionId: String, backoff: Backoff) {
        self.sessionId = sessionId
        self.backoff = backoff
    }

    // MARK: Derived

    var isConnected: Bool { phase == .connected }

    /// The public connection state for this phase.
    var connectionState: ConnectionState {
        switch phase {
        case .idle: .idle
        case .connecting where !hasConnectedBefore && lastCloseReason == "InitialConnect": .connecting
        case .connecting, .waitingToReconnect: .reconnecting(reason: lastCloseReason)
        case .connected: .connected
        case .authenticationFailed(let message): .authenticationFailed(message: message)
        case .closed: .closed
        }
    }

    /// The error for a call that ran out of time now: `unreachable` while there is no connection, else `timeout`.
    func timeoutError(what: String) -> ConvexClientError {
        switch phase {
        case .connected:
            ConvexClientError(.timeout, message: "No answer from the deployment before the \(what) timed out")
        case .authenticationFailed(let message):
            ConvexClientError(.authenticationFailed, message: message)
        default:
            ConvexClientError(
                .unreachable,
                message:
                    "The deployment could not be reached before the \(what) timed out (last error: \(lastCloseReason))")
        }
    }

    // MARK: Subscriptions

    /// A subscriber starts watching `(udfPath, args)`. Identical pairs share one upstream query.
    mutating func subscribe(_ subscriber: SubscriberID, udfPath: String, args: [String: ConvexValue]) -> Effects {
        var effects = Effects()
        switch phase {
        case .closed:
            effects.deliveries.append(
                (subscriber, .failure(ConvexClientError(.clientClosed, message: "The client is closed"))))
            return effects
        case .idle:
            effects.startConnection = true
        default:
            break
        }
        let key = QueryKey(path: UdfPath.canonicalize(udfPath) ?? udfPath, args: args)
        if let id = queryIDs[key] {
            queries[id]?.subscribers.insert(subscriber)
            subscriberQuery[subscriber] = id
            if let result = queries[id]?.result {
                effects.deliveries.append((subscriber, result))
            }
        } else {
            let id = nextQueryID
            nextQueryID &+= 1
            var query = Query(id: id, key: key, udfPath: udfPath, args: args)
            query.subscribers.insert(subscriber)
            queries[id] = query
            queryIDs[key] = id
            subscriberQuery[subscriber] = id
            if phase == .connected {
                effects.send.append(modifyQuerySet([.add(.init(queryId: id, udfPath: udfPath, args: args))]))
            }
        }
        if case .authenticationFailed(let message) = phase {
            effects.deliveries.append(
                (subscriber, .failure(ConvexClientError(.authenticationFailed, message: message))))
        }
        return effects
    }

    /// A subscriber stops; the upstream query is removed with its last subscriber.
    mutating func unsubscribe(_ subscriber: SubscriberID) -> Effects {
        var effects = Effects()
        guard let id = subscriberQuery.removeValue(forKey: subscriber) else { return effects }
        queries[id]?.subscribers.remove(subscriber)
        if let query = queries[id], query.subscribers.isEmpty {
            queries[id] = nil
            queryIDs[query.key] = nil
            if phase == .connected {
                effects.send.append(modifyQuerySet([.remove(queryId: id)]))
            }
        }
        return effects
    }

    /// Asks the deployment to move this client's view to its latest snapshot: a `ModifyQuerySet` with no
    /// modifications, which the Convex backend answers with a Transition to its latest timestamp even when no query
    /// changed (a session's timestamp otherwise moves only when one of its queries changes, its query set or identity
    /// changes, or one of its own mutations commits). Nothing while disconnected: the next socket starts from the
    /// latest snapshot anyway.
    mutating func refreshView() -> Effects {
        var effects = Effects()
        if phase == .connected { effects.send.append(modifyQuerySet([])) }
        return effects
    }

    private mutating func modifyQuerySet(_ modifications: [ClientMessage.QuerySetModification]) -> ClientMessage {
        let base = querySetVersion
        querySetVersion += 1
        return .modifyQuerySet(.init(baseVersion: base, newVersion: querySetVersion, modifications: modifications))
    }

    // MARK: Mutations and actions

    /// Queues a mutation or action; it is sent now if connected, else on the next socket.
    /// With `id`, the request goes out under that request id (a resend of an earlier session's request), unless a
    /// request of this client has it already: then it fails at once.
    mutating func request(_ kind: RequestKind, udfPath: String, args: [String: ConvexValue], id given: RequestID? = nil)
        -> (RequestID, Effects)
    {
        var effects = Effects()
        let id = given ?? nextRequestID
        if let given {
            guard requests[given] == nil else {
                // The caller's request is refused; the one holding the id goes on.
                let failure = ConvexClientError(.invalidArguments, message: "Request id \(given) is in use")
                effects.completions.append((.max, .failure(failure)))
                return (.max, effects)
            }
            nextRequestID = max(nextRequestID, given &+ 1)
        } else {
            nextRequestID &+= 1
        }
        switch phase {
        case .closed:
            effects.completions.append(
                (id, .failure(ConvexClientError(.clientClosed, message: "The client is closed"))))
            return (id, effects)
        case .authenticationFailed(let message):
            effects.completions.append((id, .failure(ConvexClientError(.authenticationFailed, message: message))))
            return (id, effects)
        case .idle:
            effects.startConnection = true
        default:
            break
        }
        var request = Request(kind: kind, udfPath: udfPath, args: args, status: .notSent)
        if phase == .connected {
            request.status = .sent
            effects.send.append(Self.message(for: request, id: id))
        }
        requests[id] = request
        return (id, effects)
    }

    /// Drops a request whose caller gave up (timeout or cancellation). Returns its status when it was pending.
    mutating func abandonRequest(_ id: RequestID) -> RequestStatus? {
        requests.removeValue(forKey: id)?.status
    }

    private static func message(for request: Request, id: RequestID) -> ClientMessage {
        let body = ClientMessage.FunctionRequest(requestId: id, udfPath: request.udfPath, args: request.args)
        return request.kind == .mutation ? .mutation(body) : .action(body)
    }

    // MARK: Authentication

    /// New credentials. Sent at once on an open socket (the server bumps the identity version and re-runs every
    /// query); otherwise used from the next connect. Leaves the authentication-failed state.
    mutating func setAuth(_ setting: AuthSetting, token: AuthenticationToken?) -> Effects {
        var effects = Effects()
        auth = setting
        consecutiveAuthFailures = 0
        pendingAuthFailure = nil
        forceTokenRefresh = false
        currentToken = token
        invalidateTokenRefresh()
        switch phase {
        case .connected:
            effects.send.append(.authenticate(.init(baseVersion: identityVersion, token: token ?? .none)))
            identityVersion += 1
        case .authenticationFailed:
            phase = .waitingToReconnect
            backoff.reset()
            effects.wakeConnectionLoop = true
        case .waitingToReconnect:
            effects.wakeConnectionLoop = true
        default:
            break
        }
        return effects
    }

    // MARK: Connection lifecycle

    /// The owner starts opening a socket.
    mutating func connectAttemptStarted() {
        switch phase {
        case .idle, .waitingToReconnect, .connecting: phase = .connecting
        default: break
        }
    }

    /// The token provider answered before a connect; ignored if the credentials changed meanwhile.
    mutating func providerTokenResolved(_ token: AuthenticationToken?) {
        if auth == .provider { currentToken = token }
    }

    /// A socket is open: everything the server must know, in protocol order.
    mutating func connectionOpened() -> Effects {
        var effects = Effects()
        guard phase == .connecting || phase == .waitingToReconnect else { return effects }
        phase = .connected
        remoteVersion = .initial
        querySetVersion = 0
        identityVersion = 0
        invalidateTokenRefresh()
        effects.send.append(
            .connect(
                .init(
                    sessionId: sessionId, connectionCount: connectionCount, lastCloseReason: lastCloseReason,
                    maxObservedTimestamp: maxObservedTimestamp, clientTs: 0)))
        connectionCount &+= 1
        if let token = currentToken {
            effects.send.append(.authenticate(.init(baseVersion: 0, token: token)))
            identityVersion = 1
        }
        if !queries.isEmpty || hasConnectedBefore {
            // Each query's journal goes back with it, so a paginated query's page keeps the end it had.
            let adds = queries.values.sorted { $0.id < $1.id }.map {
                ClientMessage.QuerySetModification.add(
                    .init(queryId: $0.id, udfPath: $0.udfPath, args: $0.args, journal: $0.journal))
            }
            effects.send.append(modifyQuerySet(adds))
        }
        hasConnectedBefore = true
        for id in requests.keys.sorted() {
            guard var request = requests[id], request.status == .notSent else { continue }
            request.status = .sent
            requests[id] = request
            effects.send.append(Self.message(for: request, id: id))
        }
        return effects
    }

    /// The socket ended (closed by either side, failed to open, or reset). Returns what to do and the delay
    /// before the next attempt, or `nil` when the client must not reconnect (closed, or authentication failed).
    mutating func connectionClosed(reason: String, jitter: Double) -> (Effects, reconnectAfter: Duration?) {
        var effects = Effects()
        switch phase {
        case .closed, .authenticationFailed, .idle:
            return (effects, nil)
        default:
            break
        }
        lastCloseReason = reason
        remoteVersion = .initial
        querySetVersion = 0
        identityVersion = 0
        invalidateTokenRefresh()

        if let message = pendingAuthFailure {
            pendingAuthFailure = nil
            phase = .authenticationFailed(message)
            let error = ConvexClientError(.authenticationFailed, message: message)
            failAllRequests(with: error, into: &effects)
            for (id, query) in queries.sorted(by: { $0.key < $1.key }) {
                queries[id]?.result = nil
                for subscriber in query.subscribers.sorted() {
                    effects.deliveries.append((subscriber, .failure(error)))
                }
            }
            return (effects, nil)
        }

        phase = .waitingToReconnect
        for id in requests.keys.sorted() {
            guard let request = requests[id] else { continue }
            switch (request.kind, request.status) {
            case (.action, .sent):
                // Actions are not idempotent: never resend one that may have started.
                requests[id] = nil
                effects.completions.append(
                    (
                        id,
                        .failure(
                            ConvexClientError(
                                .connectionLost, message: "Connection lost while action was in flight (\(reason))",
                                functionPath: request.udfPath))
                    ))
            case (.mutation, .sent):
                requests[id]?.status = .notSent
            default:
                // Not sent yet, or a completed mutation waiting for a Transition past its ts: the next socket's
                // first Transition releases it.
                break
            }
        }
        return (effects, backoff.nextDelay(jitter: jitter))
    }

    /// The token provider threw before a connect: treated as rejected credentials, never retried in silence.
    mutating func tokenProviderFailed(_ message: String) -> Effects {
        pendingAuthFailure = message
        return connectionClosed(reason: message, jitter: 0).0
    }

    /// The client is closing for good: every call and subscriber ends.
    mutating func close() -> Effects {
        var effects = Effects()
        guard phase != .closed else { return effects }
        phase = .closed
        failAllRequests(with: ConvexClientError(.clientClosed, message: "The client is closed"), into: &effects)
        return effects
    }

    private mutating func failAllRequests(with error: ConvexClientError, into effects: inout Effects) {
        for id in requests.keys.sorted() {
            guard let request = requests.removeValue(forKey: id) else { continue }
            if case .completed(let value, _) = request.status {
                effects.completions.append((id, .success(value)))
            } else {
                effects.completions.append((id, .failure(error.withFunctionPath(request.udfPath))))
            }
        }
    }

    // MARK: Server messages

    /// Applies one decoded server message. A message that breaks the protocol sets
    /// ``Effects/resetConnection`` and changes nothing else.
    mutating func receive(_ message: ServerMessage) -> Effects {
        var effects = Effects()
        guard phase == .connected else { return effects }
        switch message {
        case .transition(let transition):
            applyTransition(transition, into: &effects)
        case .mutationResponse(let response):
            applyMutationResponse(response, into: &effects)
        case .actionResponse(let response):
            applyActionResponse(response, into: &effects)
        case .authError(let error):
            consecutiveAuthFailures += 1
            let text = "AuthError: \(error.error)"
            if auth == .provider && consecutiveAuthFailures == 1 {
                // The token may just have expired: ask the provider for a fresh one once.
                forceTokenRefresh = true
            } else {
                pendingAuthFailure = error.error
            }
            effects.resetConnection = text
            return effects
        case .fatalError(let error):
            effects.resetConnection = "FatalError: \(error)"
            return effects
        case .transitionChunk:
            effects.resetConnection = "Unexpected TransitionChunk (only sent to npm clients)"
            return effects
        case .ping:
            break
        }
        if effects.resetConnection == nil {
            backoff.reset()
        }
        return effects
    }

    private mutating func applyTransition(_ t: ServerMessage.Transition, into effects: inout Effects) {
        guard t.startVersion == remoteVersion else {
            effects.resetConnection = "StartVersionMismatch"
            return
        }
        let end = t.endVersion
        guard end.querySet >= t.startVersion.querySet, end.querySet <= querySetVersion else {
            effects.resetConnection =
                "Transition to query set version \(end.querySet) which the client never sent (latest \(querySetVersion))"
            return
        }
        guard end.identity >= t.startVersion.identity, end.identity <= identityVersion else {
            effects.resetConnection =
                "Transition to identity version \(end.identity) which the client never sent (latest \(identityVersion))"
            return
        }
        guard end.ts >= t.startVersion.ts else {
            effects.resetConnection = "Transition goes back in time (\(t.startVersion.ts) to \(end.ts))"
            return
        }
        remoteVersion = end
        if maxObservedTimestamp.map({ end.ts > $0 }) ?? true {
            maxObservedTimestamp = end.ts
        }
        if end.identity == identityVersion {
            consecutiveAuthFailures = 0
            forceTokenRefresh = false
            if auth == .provider, identityVersion > 0, refreshPlannedFor != identityVersion {
                effects.tokenConfirmed = true
            }
        }
        var applied = AppliedTransition(ts: end.ts)
        defer { effects.transition = applied }
        for modification in t.modifications {
            let id = modification.queryId
            guard let query = queries[id] else { continue }  // removed meanwhile
            let result: QueryResult
            switch modification {
            case .queryUpdated(_, let value, _, let journal):
                result = .success(value)
                queries[id]?.journal = journal
            case .queryFailed(_, let errorMessage, let logLines, let journal, let errorData):
                result = .failure(
                    .functionFailure(
                        message: errorMessage, errorData: errorData, logLines: logLines, functionPath: query.udfPath))
                queries[id]?.journal = journal
            case .queryRemoved:
                continue
            }
            if query.result == result { continue }
            queries[id]?.result = result
            applied.changed.append(id)
            for subscriber in query.subscribers.sorted() {
                effects.deliveries.append((subscriber, result))
            }
        }
        // Read-your-writes: a mutation is done once the client's view includes its commit.
        for id in requests.keys.sorted() {
            guard let request = requests[id], case .completed(let value, let ts) = request.status else { continue }
            if ts.map({ $0 <= end.ts }) ?? true {
                requests[id] = nil
                effects.completions.append((id, .success(value)))
                if let ts { effects.commitTimestamps[id] = ts }
            }
        }
    }

    private mutating func applyMutationResponse(_ r: ServerMessage.MutationResponse, into effects: inout Effects) {
        guard let request = requests[r.requestId] else { return }  // abandoned by its caller
        guard request.kind == .mutation else {
            effects.resetConnection = "Mismatched request type from server (MutationResponse for action \(r.requestId))"
            return
        }
        if case .completed = request.status { return }  // duplicate
        switch r.result {
        case .success(let value):
            if let ts = r.ts, maxObservedTimestamp.map({ ts > $0 }) ?? true {
                maxObservedTimestamp = ts
            }
            if let ts = r.ts, ts <= remoteVersion.ts {
                requests[r.requestId] = nil
                effects.completions.append((r.requestId, .success(value)))
                effects.commitTimestamps[r.requestId] = ts
            } else {
                requests[r.requestId]?.status = .completed(value, ts: r.ts)
            }
        case .failure(let message, let errorData):
            requests[r.requestId] = nil
            effects.completions.append(
                (
                    r.requestId,
                    .failure(
                        .functionFailure(
                            message: message, errorData: errorData, logLines: r.logLines, functionPath: request.udfPath)
                    )
                ))
        }
    }

    private mutating func applyActionResponse(_ r: ServerMessage.ActionResponse, into effects: inout Effects) {
        guard let request = requests[r.requestId] else { return }
        guard request.kind == .action else {
            effects.resetConnection = "Mismatched request type from server (ActionResponse for mutation \(r.requestId))"
            return
        }
        requests[r.requestId] = nil
        switch r.result {
        case .success(let value):
            effects.completions.append((r.requestId, .success(value)))
        case .failure(let message, let errorData):
            effects.completions.append(
                (
                    r.requestId,
                    .failure(
                        .functionFailure(
                            message: message, errorData: errorData, logLines: r.logLines, functionPath: request.udfPath)
                    )
                ))
        }
    }
}
