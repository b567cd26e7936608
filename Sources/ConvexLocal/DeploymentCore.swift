import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TimeSource

/// The state of a deployment that outlives its listening server: store, functions, live sync connections,
/// the mutation-dedupe cache and the test switches. A restart of the server keeps it.
final class DeploymentCore: Sendable {
    let store: DocumentStore
    let registry: FunctionRegistry
    let adminKey: String?
    let verifier: TokenVerifier
    let logger: Logger
    let dedupe: MutationResultCache
    let orphans: OrphanedMutations
    private let accepted = Atomic<Int>(0)
    private let connections: ConnectionSet
    private let stalled = Mutex<Bool>(false)
    private let closeReasons = Mutex<[String]>([])
    static let keptCloseReasons = 32
    let engine: FunctionEngine

    let heartbeatInterval: Duration
    let jsonPingAfter: Duration
    /// Heartbeats, pings and the wall clock of JWT claims (`exp`, `nbf`) and identity expiry.
    let clock: ElapsedClock

    init(
        registry: FunctionRegistry, adminKey: String?, verifier: TokenVerifier = TokenVerifier(), logger: Logger,
        heartbeatInterval: Duration = .seconds(5), jsonPingAfter: Duration = .seconds(15),
        clock: ElapsedClock = .continuous, unknownFunctionAdvice: String = LocalDeployment.registerAdvice
    ) {
        self.clock = clock
        self.dedupe = MutationResultCache(clock: clock)
        self.orphans = OrphanedMutations(clock: clock)
        self.verifier = verifier
        self.heartbeatInterval = heartbeatInterval
        self.jsonPingAfter = jsonPingAfter
        let store = DocumentStore()
        let connections = ConnectionSet()
        self.connections = connections
        self.store = store
        self.registry = registry
        self.adminKey = adminKey
        self.logger = logger
        self.engine = FunctionEngine(
            registry: registry, store: store, logger: logger, unknownFunctionAdvice: unknownFunctionAdvice
        ) { tables, ts in
            for connection in connections.all { connection.notifyCommit(tables: tables) }
        }
    }

    /// Sync sockets accepted since start.
    var acceptedConnections: Int { accepted.load(ordering: .relaxed) }

    func register(_ connection: SyncConnection) {
        accepted.add(1, ordering: .relaxed)
        connections.members.withLock { $0[ObjectIdentifier(connection)] = connection }
    }

    func unregister(_ connection: SyncConnection) {
        _ = connections.members.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    var liveConnections: [SyncConnection] { connections.all }

    /// Remembers the `lastCloseReason` of a reconnecting client's Connect (the latest ``keptCloseReasons``).
    func recordCloseReason(_ reason: String) {
        closeReasons.withLock { reasons in
            reasons.append(reason)
            if reasons.count > Self.keptCloseReasons { reasons.removeFirst() }
        }
    }

    var recentCloseReasons: [String] { closeReasons.withLock { $0 } }

    var isStalled: Bool { stalled.withLock { $0 } }

    func setStalled(_ value: Bool) {
        stalled.withLock { $0 = value }
        if !value {
            for connection in liveConnections { connection.post(.flush) }
        }
    }

    /// Resolves an `Authorization` header value (`Bearer <jwt>` or `Convex <admin key>`) at `now` (seconds since 1970).
    func caller(authorization: String?, now: Double) async throws(AuthenticationError) -> CallerIdentity {
        guard let header = authorization?.trimmingCharacters(in: .whitespaces), !header.isEmpty else {
            return .unauthenticated
        }
        let lower = header.lowercased()
        if lower.hasPrefix("bearer ") {
            return .user(try await verifier.identity(for: String(header.dropFirst(7)), now: now))
        }
        if lower.hasPrefix("convex ") {
            return try adminCaller(key: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces))
        }
        throw .invalidHeader
    }

    func adminCaller(key: String) throws(AuthenticationError) -> CallerIdentity {
        guard let adminKey, key == adminKey else { throw .badAdminKey }
        return .admin(actingAs: nil)
    }
}

final class ConnectionSet: Sendable {
    let members = Mutex<[ObjectIdentifier: SyncConnection]>([:])
    var all: [SyncConnection] { members.withLock { Array($0.values) } }
}

/// Committed mutations whose completion (response and following Transition) never reached the client because the
/// server closed the socket first. The Rust/Python client resends such a mutation on its next socket with the same
/// requestId but a new sessionId, so `(sessionId, requestId)` cannot match it; a reconnecting socket's mutation
/// with the same requestId, path and arguments, run by the same caller (``InertIdentity``), claims the recorded result
/// instead of running again. Entries live 60 s.
final class OrphanedMutations: Sendable {
    struct Key: Hashable {
        var requestId: UInt32
        var caller: InertIdentity
        var path: String
        var args: [UInt8]
    }

    private let entries = Mutex<[Key: (response: ServerMessage.MutationResponse, added: Duration)]>([:])
    static let lifetime: Duration = .seconds(60)
    private let clock: ElapsedClock

    init(clock: ElapsedClock) {
        self.clock = clock
    }

    private static func key(_ request: ClientMessage.FunctionRequest, caller: CallerIdentity) -> Key {
        let call = MutationResults.Call(request)
        return Key(requestId: request.requestId, caller: InertIdentity(caller), path: call.path, args: call.args)
    }

    func add(request: ClientMessage.FunctionRequest, caller: CallerIdentity, response: ServerMessage.MutationResponse) {
        let now = clock.now
        let key = Self.key(request, caller: caller)
        entries.withLock { entries in
            entries = entries.filter { now - $0.value.added < Self.lifetime }
            entries[key] = (response, now)
        }
    }

    func claim(_ request: ClientMessage.FunctionRequest, caller: CallerIdentity) -> ServerMessage.MutationResponse? {
        let now = clock.now
        let key = Self.key(request, caller: caller)
        return entries.withLock { entries in
            guard let entry = entries.removeValue(forKey: key), now - entry.added < Self.lifetime else {
                return nil
            }
            return entry.response
        }
    }
}
