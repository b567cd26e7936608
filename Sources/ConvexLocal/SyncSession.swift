import ConvexSyncProtocol
import ConvexValues

/// The result of evaluating one subscribed query.
enum QueryEvaluation: Sendable, Hashable {
    case updated(value: ConvexValue, logLines: [String], journal: String? = nil)
    case failed(errorMessage: String, logLines: [String], errorData: ConvexValue?, journal: String? = nil)
}

/// The sync-protocol state of one WebSocket (reference §4.5), as a plain value with no I/O.
///
/// The connection feeds it events and performs the actions it returns. Query evaluation happens outside:
/// ``pendingEvaluations()`` says what to evaluate, ``completeUpdate(evaluations:readTables:ts:)`` turns the results
/// into the next Transition (or none when nothing changed).
struct SyncSession {
    enum Phase: Equatable {
        case awaitingConnect
        case open
        case closed
    }

    struct Subscription {
        var udfPath: String
        var args: [String: ConvexValue]
        var lastResult: QueryEvaluation?
        var readTables: Set<String> = []
        /// The latest journal: the client's from `Add` until the first run, then each run's.
        var journal: String?
    }

    /// What the connection must do.
    enum Action: Equatable {
        case send(ServerMessage)
        case runMutation(ClientMessage.FunctionRequest)
        case runAction(ClientMessage.FunctionRequest)
        /// Evaluate ``pendingEvaluations()`` and call ``completeUpdate``.
        case update
        /// Close the socket with this code (and reason), after the sends before it.
        case close(code: UInt16, reason: String?)
    }

    /// Actions one socket may run at once by default. Convex closes a socket past 1,000
    /// (`TooManyInflightActionsForSingleClient`), which is one client's socket there; here a gateway carries every
    /// caller of an identity on one socket (every anonymous caller on the same one), as many as its 10,000 connections.
    static let defaultMaxInflightActions = 10_000

    private(set) var phase: Phase = .awaitingConnect
    private(set) var sessionId: String?
    private(set) var querySetVersion: UInt32 = 0
    private(set) var identityVersion: UInt32 = 0
    private(set) var caller: CallerIdentity = .unauthenticated
    /// `endVersion` of the last Transition sent (the next `startVersion`).
    private(set) var lastSent: StateVersion = .initial
    private(set) var subscriptions: [UInt32: Subscription] = [:]
    private var removed: [UInt32] = []
    private var dirty: Set<UInt32> = []
    /// A successful mutation response needs a Transition at or after this timestamp.
    private var transitionNeededAt: ConvexTimestamp?
    private(set) var inflightActions = 0
    /// The user identity's `exp` passed: nothing is served until the client authenticates again.
    private(set) var identityExpired = false
    /// Mutations and actions that arrived while the identity was expired, run after the next Authenticate.
    private var heldRequests: [ClientMessage] = []

    let adminKey: String?
    /// Actions this socket may run at once; one more is refused alone (see ``receive(_:latestTs:now:user:)``).
    let maxInflightActions: Int

    init(adminKey: String?, maxInflightActions: Int = SyncSession.defaultMaxInflightActions) {
        self.adminKey = adminKey
        self.maxInflightActions = maxInflightActions
    }

    private mutating func fatal(_ message: String) -> [Action] {
        phase = .closed
        return [.send(.fatalError(message)), .close(code: 1000, reason: nil)]
    }

    /// Handles one decoded client message. An action while ``maxInflightActions`` run is answered at once with a
    /// failed `ActionResponse` (Convex's `TooManyInflightActionsForSingleClient`) and the socket stays open.
    /// - Parameters:
    ///   - latestTs: the deployment's latest timestamp, for the `maxObservedTimestamp` check.
    ///   - now: the wall clock (seconds since 1970), for the identity's expiry.
    ///   - user: for an `Authenticate` with a user token, the verifier's verdict on that token.
    mutating func receive(
        _ message: ClientMessage, latestTs: ConvexTimestamp, now: Double = 0,
        user: Result<UserIdentity, AuthenticationError>? = nil
    ) -> [Action] {
        guard phase != .closed else { return [] }
        if phase == .awaitingConnect {
            guard case .connect(let connect) = message else {
                return fatal("The first message on a sync socket must be Connect, got \(message.typeName)")
            }
            if let observed = connect.maxObservedTimestamp, observed > latestTs {
                phase = .closed
                return [.close(code: 1011, reason: "InternalServerError")]
            }
            sessionId = connect.sessionId
            phase = .open
            return []
        }
        switch message {
        case .connect:
            return fatal("Received a second Connect on the same socket")
        case .modifyQuerySet(let m):
            guard m.baseVersion == querySetVersion else {
                return fatal(
                    "Base version \(m.baseVersion) passed up doesn't match the current version \(querySetVersion)")
            }
            guard m.newVersion > m.baseVersion else {
                return fatal("New version \(m.newVersion) must be greater than base version \(m.baseVersion)")
            }
            var next = subscriptions
            var nextRemoved = removed
            var nextDirty = dirty
            for modification in m.modifications {
                switch modification {
                case .add(let add):
                    guard next[add.queryId] == nil else { return fatal("Duplicate query ID: \(add.queryId)") }
                    next[add.queryId] = Subscription(udfPath: add.udfPath, args: add.args, journal: add.journal)
                    nextDirty.insert(add.queryId)
                    nextRemoved.removeAll { $0 == add.queryId }
                case .remove(let queryId):
                    guard next.removeValue(forKey: queryId) != nil else {
                        return fatal("Nonexistent query id: \(queryId)")
                    }
                    nextDirty.remove(queryId)
                    nextRemoved.append(queryId)
                }
            }
            subscriptions = next
            removed = nextRemoved
            dirty = nextDirty
            querySetVersion = m.newVersion
            return [.update]
        case .authenticate(let a):
            return authenticate(a, user: user, now: now)
        case .mutation, .action:
            if identityExpired {
                guard heldRequests.count < SyncConnection.maxPendingMutations else {
                    phase = .closed
                    return [.close(code: 1013, reason: "TooManyConcurrentMutations")]
                }
                heldRequests.append(message)
                return []
            }
            return run(message)
        case .event:
            return []
        }
    }

    private mutating func authenticate(
        _ a: ClientMessage.Authenticate, user: Result<UserIdentity, AuthenticationError>?,
        now: Double
    ) -> [Action] {
        guard a.baseVersion == identityVersion else {
            return fatal(
                "Base identity version \(a.baseVersion) passed up doesn't match the current identity version \(identityVersion)"
            )
        }
        let newCaller: CallerIdentity
        switch a.token {
        case .none:
            newCaller = .unauthenticated
        case .user:
            switch user {
            case .success(let identity)?: newCaller = .user(identity)
            case .failure(let error)?: return authUpdateFailed(error.message)
            case nil: return authUpdateFailed("The token was not verified")
            }
        case .admin(let key, let actingAs):
            guard let adminKey, key == adminKey else {
                return authUpdateFailed(AuthenticationError.badAdminKey.message)
            }
            var user: UserIdentity? = nil
            if case .object(let attributes)? = actingAs { user = UserIdentity(claims: attributes) }
            newCaller = .admin(actingAs: user)
        }
        caller = newCaller
        identityVersion += 1
        identityExpired = false
        // An identity change re-runs every query.
        dirty.formUnion(subscriptions.keys)
        // A token inside Convex's leeway is accepted, yet its identity may already be past `exp`.
        let expired = checkExpiry(now: now)
        if !expired.isEmpty { return expired }
        let held = heldRequests
        heldRequests = []
        return [.update] + held.flatMap { run($0) }
    }

    private mutating func run(_ request: ClientMessage) -> [Action] {
        switch request {
        case .mutation(let request):
            return [.runMutation(request)]
        case .action(let request):
            guard inflightActions < maxInflightActions else {
                // Refused alone, answered at once: the socket and the actions running on it go on. Closing it (as
                // Convex does) would fail every other caller's call in flight on it.
                let error = FunctionCallError.tooManyInflightActions(limit: maxInflightActions)
                let refusal = ServerMessage.ActionResponse(
                    requestId: request.requestId,
                    result: .failure(message: error.clientMessage(requestId: makeRequestId()), errorData: nil))
                return [.send(.actionResponse(refusal))]
            }
            inflightActions += 1
            return [.runAction(request)]
        default:
            return []
        }
    }

    /// A rejected Authenticate: `AuthError` with `authUpdateAttempted: true`, then the socket closes (Convex).
    private mutating func authUpdateFailed(_ message: String) -> [Action] {
        phase = .closed
        return [
            .send(.authError(.init(error: message, baseVersion: identityVersion, authUpdateAttempted: true))),
            .close(code: 1000, reason: nil),
        ]
    }

    /// When the current user identity expires (its `exp`), if it has not yet: the owner calls ``checkExpiry(now:)``
    /// then.
    var identityExpiration: Double? {
        guard phase == .open, !identityExpired, case .user(let user) = caller else { return nil }
        return user.expiration
    }

    /// At or after `exp` of the user identity (Convex: `now >= exp`, no leeway) the session sends `AuthError` with
    /// `authUpdateAttempted: false` once and stops serving — no Transitions, mutations and actions held — until an
    /// Authenticate succeeds. The socket stays open, so the client can send a fresh token on it.
    mutating func checkExpiry(now: Double) -> [Action] {
        guard let expiration = identityExpiration, now >= expiration else { return [] }
        identityExpired = true
        let error = AuthenticationError.tokenExpired
        return [
            .send(.authError(.init(error: error.message, baseVersion: identityVersion, authUpdateAttempted: false)))
        ]
    }

    /// A frame that could not be decoded ends the session with a FatalError.
    mutating func receiveInvalidFrame(_ message: String) -> [Action] {
        guard phase != .closed else { return [] }
        return fatal(message)
    }

    /// A mutation finished: send its response, then a Transition at or after its commit timestamp. Failures get a
    /// Transition too: the Rust client releases a failure that carries `errorData` only at the next Transition.
    mutating func mutationCompleted(_ response: ServerMessage.MutationResponse) -> [Action] {
        guard phase == .open else { return [] }
        let ts = response.ts ?? lastSent.ts
        transitionNeededAt = max(transitionNeededAt ?? ts, ts)
        return [.send(.mutationResponse(response)), .update]
    }

    /// An action finished.
    mutating func actionCompleted(_ response: ServerMessage.ActionResponse) -> [Action] {
        inflightActions = max(0, inflightActions - 1)
        guard phase == .open else { return [] }
        return [.send(.actionResponse(response))]
    }

    /// Tables were written: marks the subscriptions that read them. Returns whether an update is needed.
    mutating func invalidate(tables: Set<String>) -> Bool {
        guard phase == .open else { return false }
        var any = false
        for (id, subscription) in subscriptions where !subscription.readTables.isDisjoint(with: tables) {
            dirty.insert(id)
            any = true
        }
        return any
    }

    /// The queries to evaluate for the next update, all at one snapshot.
    func pendingEvaluations() -> [(queryId: UInt32, udfPath: String, args: [String: ConvexValue], journal: String?)] {
        guard !identityExpired else { return [] }
        return dirty.sorted().compactMap { id in
            subscriptions[id].map { (id, $0.udfPath, $0.args, $0.journal) }
        }
    }

    /// Builds the next Transition from the evaluations of ``pendingEvaluations()`` at snapshot `ts`; `nil` when
    /// there is nothing to tell the client (no changed result, no version change, no mutation waiting).
    mutating func completeUpdate(
        evaluations: [UInt32: QueryEvaluation], readTables: [UInt32: Set<String>],
        ts: ConvexTimestamp
    ) -> ServerMessage? {
        guard phase == .open, !identityExpired else { return nil }
        var modifications: [ServerMessage.StateModification] = removed.map { .queryRemoved(queryId: $0) }
        removed = []
        for id in dirty.sorted() {
            guard var subscription = subscriptions[id], let evaluation = evaluations[id] else { continue }
            subscription.readTables = readTables[id] ?? []
            if subscription.lastResult != evaluation {
                switch evaluation {
                case .updated(let value, let logLines, let journal):
                    modifications.append(.queryUpdated(queryId: id, value: value, logLines: logLines, journal: journal))
                    subscription.journal = journal
                case .failed(let message, let logLines, let errorData, let journal):
                    modifications.append(
                        .queryFailed(
                            queryId: id, errorMessage: message, logLines: logLines, journal: journal,
                            errorData: errorData))
                    subscription.journal = journal
                }
                subscription.lastResult = evaluation
            }
            subscriptions[id] = subscription
            dirty.remove(id)
        }
        let end = StateVersion(querySet: querySetVersion, identity: identityVersion, ts: max(ts, lastSent.ts))
        let versionChanged = end.querySet != lastSent.querySet || end.identity != lastSent.identity
        let mutationWaiting = transitionNeededAt.map { $0 <= end.ts } ?? false
        guard !modifications.isEmpty || versionChanged || mutationWaiting else { return nil }
        if mutationWaiting { transitionNeededAt = nil }
        let transition = ServerMessage.Transition(startVersion: lastSent, endVersion: end, modifications: modifications)
        lastSent = end
        return .transition(transition)
    }

    /// The session is over (socket closed or closing).
    mutating func close() {
        phase = .closed
    }
}
