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
    }

    private struct State {
        var members: [UpstreamIdentity: Member] = [:]
        /// The members of signed-in identities (all but the anonymous one).
        var identities = 0
        var nextID = 1
    }

    private let state = Mutex(State())
    private let factory: Factory
    private let idleTimeout: Duration
    private let maxIdentities: Int
    private let logger: Logger
    private let clock: GatewayClock

    /// - Parameter maxIdentities: the signed-in identities that may hold a connection at once (the anonymous one
    ///   always may).
    package init(
        idleTimeout: Duration, maxIdentities: Int = .max, logger: Logger, clock: GatewayClock = .continuous,
        factory: @escaping Factory
    ) {
        self.clock = clock
        self.factory = factory
        self.idleTimeout = idleTimeout
        self.maxIdentities = maxIdentities
        self.logger = logger
    }

    /// The connection for `identity`, opened on first use; `id` is its opaque identity key.
    /// - Throws: 503 `Overloaded` when `identity` is a signed-in one without a connection and `maxIdentities`
    ///   signed-in identities hold one already.
    package func upstream(for identity: UpstreamIdentity) throws(GatewayError) -> (
        id: String, upstream: any ConvexUpstream
    ) {
        let found = state.withLock { state -> (id: String, upstream: any ConvexUpstream)? in
            if var member = state.members[identity] {
                member.lastUsed = clock.now
                state.members[identity] = member
                return (member.id, member.upstream)
            }
            let id: String
            if case .anonymous = identity {
                id = ""
            } else {
                if state.identities >= maxIdentities { evictRefused(&state) }
                guard state.identities < maxIdentities else { return nil }
                id = "u\(state.nextID)"
                state.nextID += 1
                state.identities += 1
            }
            let member = Member(id: id, upstream: factory(identity), lastUsed: clock.now)
            state.members[identity] = member
            return (member.id, member.upstream)
        }
        guard let found else {
            throw .identityLimitReached(retryAfter: max(1, Int(idleTimeout.seconds.rounded(.up))))
        }
        return found
    }

    /// Frees the places of the signed-in identities whose token the deployment refused (forged, or expired) and that
    /// no call leases now: such a connection serves nothing, so it must not hold a place until it has been idle for
    /// the idle period. Their connections are closed after the lock.
    private func evictRefused(_ state: inout State) {
        var closing: [any ConvexUpstream] = []
        for (identity, member) in state.members
        where identity != .anonymous && member.leases == 0 && member.upstream.credentialsRefused {
            state.members[identity] = nil
            state.identities -= 1
            closing.append(member.upstream)
        }
        guard !closing.isEmpty else { return }
        logger.debug("closed upstream connections whose token was refused", metadata: ["count": "\(closing.count)"])
        Task { for upstream in closing { await upstream.close() } }
    }

    /// Runs a one-shot call with the identity's connection, keeping it from being closed as idle meanwhile.
    /// - Throws: the refusal of ``upstream(for:)``.
    package func withUpstream<T: Sendable>(
        for identity: UpstreamIdentity, _ body: (_ id: String, _ upstream: any ConvexUpstream) async -> T
    ) async throws(GatewayError) -> T {
        let (id, upstream) = try upstream(for: identity)
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
                state.members[identity] = nil
                state.identities -= 1
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
            }
            return state.members.values.map(\.upstream)
        }
        for upstream in all { await upstream.close() }
    }
}
