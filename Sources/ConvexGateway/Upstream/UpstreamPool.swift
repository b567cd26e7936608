import Convex
import Logging
import Synchronization

/// Who a request acts as upstream.
public enum UpstreamIdentity: Hashable, Sendable {
    case anonymous
    /// A user's JWT from `Authorization: Bearer …`, forwarded to Convex as is.
    case bearer(String)
}

/// One upstream connection per distinct caller identity (and one anonymous), so that no user ever sees another
/// user's results. A user's connection is closed once it has been idle for `idleTimeout`. At most `maxIdentities`
/// signed-in identities hold one at once: each is a socket, opened for any well-formed token before the deployment
/// has judged it, so a client sending a new token with every request would otherwise run the process out of
/// descriptors.
///
/// Tokens are held only in memory as dictionary keys: subscriptions and logs refer to an identity by an opaque
/// per-process id (`u1`, `u2`, …), never by the token or a hash of it.
package final class UpstreamPool: Sendable {
    package typealias Factory = @Sendable (UpstreamIdentity) -> any ConvexUpstream

    private struct Member {
        var id: String
        var upstream: any ConvexUpstream
        var leases = 0
        /// The gateway clock's time of the last use.
        var lastUsed: Duration
        /// The client address whose request opened it, which it counts against.
        var address: ClientKey?
    }

    private struct State {
        var members: [UpstreamIdentity: Member] = [:]
        /// The members of signed-in identities (all but the anonymous one).
        var identities = 0
        /// The signed-in members each client address opened.
        var byAddress: [ClientKey: Int] = [:]
        var nextID = 1

        /// The signed-in members `address` opened.
        func held(by address: ClientKey?) -> Int {
            address.map { byAddress[$0, default: 0] } ?? 0
        }

        /// Removes a signed-in member, giving back its places.
        mutating func remove(_ identity: UpstreamIdentity) -> Member? {
            guard let member = members.removeValue(forKey: identity) else { return nil }
            identities -= 1
            if let address = member.address {
                byAddress[address] = byAddress[address].map { $0 > 1 ? $0 - 1 : nil } ?? nil
            }
            return member
        }
    }

    private let state = Mutex(State())
    private let factory: Factory
    private let idleTimeout: Duration
    private let maxIdentities: Int
    private let maxIdentitiesPerAddress: Int
    private let logger: Logger
    private let clock: GatewayClock

    /// - Parameters:
    ///   - maxIdentities: the signed-in identities that may hold a connection at once (the anonymous one always may).
    ///   - maxIdentitiesPerAddress: how many of them the requests of one client address may open.
    package init(
        idleTimeout: Duration, maxIdentities: Int = .max, maxIdentitiesPerAddress: Int = .max, logger: Logger,
        clock: GatewayClock = .continuous, factory: @escaping Factory
    ) {
        self.clock = clock
        self.factory = factory
        self.idleTimeout = idleTimeout
        self.maxIdentities = maxIdentities
        self.maxIdentitiesPerAddress = maxIdentitiesPerAddress
        self.logger = logger
    }

    /// The connection for `identity`, opened on first use by a request from `address`; `id` is its opaque identity
    /// key.
    /// - Throws: for a signed-in identity without a connection, 503 `Overloaded` when `maxIdentities` signed-in
    ///   identities hold one already, 429 `TooManyIdentities` when `address` opened `maxIdentitiesPerAddress` of them;
    ///   503 `UpstreamUnavailable` at once when the deployment is known unreachable and the connection is not up
    ///   (``DeploymentReachability``), after asking the connection to try again.
    package func upstream(for identity: UpstreamIdentity, from address: ClientKey? = nil) throws(GatewayError) -> (
        id: String, upstream: any ConvexUpstream
    ) {
        let found = state.withLock { state -> Result<(id: String, upstream: any ConvexUpstream), GatewayError> in
            if var member = state.members[identity] {
                member.lastUsed = clock.now
                state.members[identity] = member
                return .success((member.id, member.upstream))
            }
            let id: String
            if case .anonymous = identity {
                id = ""
            } else {
                if state.identities >= maxIdentities || state.held(by: address) >= maxIdentitiesPerAddress {
                    evictRefused(&state)
                }
                guard state.identities < maxIdentities else {
                    return .failure(.identityLimitReached(retryAfter: max(1, Int(idleTimeout.seconds.rounded(.up)))))
                }
                guard state.held(by: address) < maxIdentitiesPerAddress else {
                    return .failure(
                        .identityShareReached(
                            limit: maxIdentitiesPerAddress, retryAfter: max(1, Int(idleTimeout.seconds.rounded(.up)))))
                }
                id = "u\(state.nextID)"
                state.nextID += 1
                state.identities += 1
                if let address { state.byAddress[address, default: 0] += 1 }
            }
            let member = Member(
                id: id, upstream: factory(identity), lastUsed: clock.now, address: id.isEmpty ? nil : address)
            state.members[identity] = member
            return .success((member.id, member.upstream))
        }
        let (id, upstream) = try found.get()
        if upstream.unreachableCause != nil {
            // A connection that is not trying (new, or idle) starts; one in its backoff goes on with it.
            Task { try? await upstream.waitUntilConnected(timeout: .zero) }
            throw .deploymentUnreachable
        }
        return (id, upstream)
    }

    /// Frees the places of the signed-in identities whose token the deployment refused (forged, or expired) and that
    /// no call leases now: such a connection serves nothing, so it must not hold a place until it has been idle for
    /// the idle period. Their connections are closed after the lock.
    private func evictRefused(_ state: inout State) {
        var closing: [any ConvexUpstream] = []
        for (identity, member) in state.members
        where identity != .anonymous && member.leases == 0 && member.upstream.credentialsRefused {
            _ = state.remove(identity)
            closing.append(member.upstream)
        }
        guard !closing.isEmpty else { return }
        logger.debug("closed upstream connections whose token was refused", metadata: ["count": "\(closing.count)"])
        Task { for upstream in closing { await upstream.close() } }
    }

    /// Runs a one-shot call with the identity's connection, keeping it from being closed as idle meanwhile.
    /// - Throws: the refusal of ``upstream(for:)``.
    package func withUpstream<T: Sendable>(
        for identity: UpstreamIdentity, from address: ClientKey? = nil,
        _ body: (_ id: String, _ upstream: any ConvexUpstream) async -> T
    ) async throws(GatewayError) -> T {
        let (id, upstream) = try upstream(for: identity, from: address)
        state.withLock { $0.members[identity]?.leases += 1 }
        defer {
            state.withLock { state in
                state.members[identity]?.leases -= 1
                state.members[identity]?.lastUsed = clock.now
            }
        }
        return await body(id, upstream)
    }

    package var connectionCount: Int { state.withLock { $0.members.count } }

    /// The anonymous connection, if open: its state answers `/readyz`.
    package var anonymous: (any ConvexUpstream)? { state.withLock { $0.members[.anonymous]?.upstream } }

    /// Closes user connections idle for longer than `idleTimeout` that `inUse` does not claim (the subscription
    /// hub claims identities it still holds subscriptions for). The anonymous connection stays open.
    package func closeIdle(inUse: (String) -> Bool) async {
        let now = clock.now
        let idle = state.withLock { state -> [any ConvexUpstream] in
            var closing: [any ConvexUpstream] = []
            for (identity, member) in state.members {
                guard identity != .anonymous, member.leases == 0, now - member.lastUsed >= idleTimeout,
                    !inUse(member.id)
                else { continue }
                _ = state.remove(identity)
                closing.append(member.upstream)
            }
            return closing
        }
        for upstream in idle {
            await upstream.close()
        }
        if !idle.isEmpty {
            logger.debug("closed idle upstream connections", metadata: ["count": "\(idle.count)"])
        }
    }

    package func closeAll() async {
        let all = state.withLock { state -> [any ConvexUpstream] in
            defer {
                state.members = [:]
                state.identities = 0
                state.byAddress = [:]
            }
            return state.members.values.map(\.upstream)
        }
        for upstream in all { await upstream.close() }
    }
}
