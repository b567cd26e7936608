import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging

/// A client of a Convex deployment over its WebSocket sync protocol, for Linux and every platform Swift runs on.
///
/// The client connects lazily (on the first call), keeps one WebSocket open, reconnects with backoff when it
/// drops, resubscribes every live query and resends unfinished mutations under one session id (so the deployment
/// applies each exactly once). One client speaks for one identity; use one client per user.
///
/// ```swift
/// let client = try ConvexClient(deploymentUrl: "http://127.0.0.1:3210")
/// let sent = try await client.mutation("messages:send", with: ["body": "hi", "author": "me"])
/// for try await messages in client.subscribe(to: "messages:list") { print(messages) }
/// ```
public final class ConvexClient: Sendable {
    let core: ClientCore
    /// The deployment URL as given.
    public let deploymentUrl: String
    /// The sync endpoint derived from it (`ws(s)://host[:port]/api/sync`).
    public let webSocketURL: String

    /// Creates a client; no connection is made until the first call.
    /// - Parameters:
    ///   - deploymentUrl: `http(s)://host[:port]` of the deployment (`ws`/`wss` accepted too); its path is
    ///     replaced by `/api/sync`.
    ///   - configuration: timeouts, backoff and the `Convex-Client` header.
    ///   - logger: where the client logs; it never bootstraps logging itself.
    /// - Throws: ``ConvexClientError/Code/invalidURL`` when the URL has another scheme or no host.
    public init(
        deploymentUrl: String,
        configuration: ConvexClientConfiguration = .init(),
        logger: Logger = Logger(label: "convex.client")
    ) throws(ConvexClientError) {
        self.deploymentUrl = deploymentUrl
        self.webSocketURL = try Self.syncURL(for: deploymentUrl)
        self.core = ClientCore(webSocketURL: webSocketURL, configuration: configuration, logger: logger)
    }

    deinit {
        core.shutdown()
    }

    /// Runs `body` with a client and closes the client afterwards, whether `body` returns or throws.
    public static func withClient<Result: Sendable>(
        deploymentUrl: String,
        configuration: ConvexClientConfiguration = .init(),
        logger: Logger = Logger(label: "convex.client"),
        _ body: (ConvexClient) async throws -> Result
    ) async throws -> Result {
        let client = try ConvexClient(deploymentUrl: deploymentUrl, configuration: configuration, logger: logger)
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch {
            await client.close()
            throw error
        }
    }

    /// `http`→`ws`, `https`→`wss`, path `/api/sync`.
    /// - Throws: ``ConvexClientError`` with `.invalidURL` for a URL without a host or with another scheme.
    package static func syncURL(for deploymentUrl: String) throws(ConvexClientError) -> String {
        guard var components = URLComponents(string: deploymentUrl), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw ConvexClientError(
                .invalidURL, message: "Deployment URL \"\(deploymentUrl)\" is not a URL with a host")
        }
        switch scheme {
        case "http", "ws": components.scheme = "ws"
        case "https", "wss": components.scheme = "wss"
        default:
            throw ConvexClientError(
                .invalidURL,
                message: "Deployment URL \"\(deploymentUrl)\" must use http, https, ws or wss, not \(scheme)")
        }
        components.path = "/api/sync"
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        guard let url = components.string else {
            throw ConvexClientError(.invalidURL, message: "Deployment URL \"\(deploymentUrl)\" cannot be rewritten")
        }
        return url
    }

    // MARK: Subscriptions

    /// A live query of `name` with `args`, as untyped Convex values. See ``ConvexSubscription``.
    public func subscribe(to name: String, with args: [String: ConvexValue] = [:]) -> ConvexSubscription<ConvexValue> {
        ConvexSubscription(core: core, functionPath: name, arguments: args) { value throws(ConvexClientError) in value }
    }

    /// Every Transition the client applies that changes one of its queries, from now until the client is closed:
    /// its timestamp and the changed queries with their new results (convex-js' `onTransition`). Each call returns an
    /// independent stream that keeps every transition until it is read.
    public func transitions() -> AsyncStream<ConvexTransition> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConvexTransition.self)
        let id = core.addListener(.all(continuation))
        continuation.onTermination = { [core] _ in core.removeListener(id) }
        return stream
    }

    /// A new, empty ``ConvexQuerySet``: live queries whose results are delivered transition by transition.
    public func makeQuerySet() -> ConvexQuerySet {
        ConvexQuerySet(core: core)
    }

    // MARK: One-shot calls

    /// The current result of query `name` with `args`.
    ///
    /// Answered from a live subscription of the same query when there is one, else by a short subscription.
    /// - Throws: ``ConvexClientError`` (function failures keep the deployment's message and `ConvexError` data).
    /// - Parameter timeout: this call's deadline instead of ``ConvexClientConfiguration/callTimeout``.
    public func query(_ name: String, with args: [String: ConvexValue] = [:], timeout: Duration? = nil)
        async throws(ConvexClientError) -> ConvexValue
    {
        try await core.queryOnce(udfPath: name, args: args, timeout: timeout ?? core.configuration.callTimeout).get()
    }

    /// Runs mutation `name` and returns its result once the client's view includes the mutation's commit
    /// (so a query issued afterwards sees the write). Discard the result for the `Void` form.
    ///
    /// The mutation is resent after a reconnect under the same session and request id, and the deployment runs it
    /// exactly once.
    /// - Throws: ``ConvexClientError``; ``ConvexClientError/Code/timeout`` and ``ConvexClientError/Code/unreachable``
    ///   say in their message whether the mutation was ever sent.
    /// - Parameter timeout: this call's deadline instead of ``ConvexClientConfiguration/callTimeout``.
    @discardableResult
    public func mutation(_ name: String, with args: [String: ConvexValue] = [:], timeout: Duration? = nil)
        async throws(ConvexClientError) -> ConvexValue
    {
        try await core.request(.mutation, udfPath: name, args: args, timeout: timeout ?? core.configuration.callTimeout)
            .get()
    }

    /// ``query(_:with:timeout:)`` with the timestamp of the snapshot the result holds at (the client's view when it
    /// was read).
    public func queryStamped(_ name: String, with args: [String: ConvexValue] = [:], timeout: Duration? = nil)
        async throws(ConvexClientError) -> (value: ConvexValue, ts: ConvexTimestamp)
    {
        let stamped = await core.queryOnceStamped(
            udfPath: name, args: args, timeout: timeout ?? core.configuration.callTimeout)
        return (try stamped.result.get(), stamped.ts)
    }

    /// ``mutation(_:with:timeout:)`` with the mutation's commit timestamp (the `ts` of the sync protocol's
    /// `MutationResponse`). The client's view includes it when this returns.
    ///
    /// With `requestId`, the mutation goes out under that request id of the client's session
    /// (``ConvexClientConfiguration/sessionId``): a resend of a mutation an earlier client of the session sent, which
    /// the deployment answers from its record if it ran. A request id this client has in flight fails with
    /// ``ConvexClientError/Code/invalidArguments``.
    public func mutationStamped(
        _ name: String, with args: [String: ConvexValue] = [:], timeout: Duration? = nil, requestId: UInt32? = nil
    ) async throws(ConvexClientError) -> (value: ConvexValue, ts: ConvexTimestamp?) {
        let (result, ts) = await core.requestCommitted(
            .mutation, udfPath: name, args: args, timeout: timeout ?? core.configuration.callTimeout,
            requestId: requestId)
        return (try result.get(), ts)
    }

    /// The timestamp of the client's view: the snapshot of the database every result it holds comes from.
    public var viewTimestamp: ConvexTimestamp {
        core.state.withLock { $0.viewTimestamp }
    }

    /// Waits until the client's view is at `ts` or later, asking the deployment for its latest snapshot while it is
    /// not (a Convex session's view otherwise moves only when one of its queries changes or one of its own mutations
    /// commits). Returns the view's timestamp, which is below `ts` if `timeout` passed first (the deployment has not
    /// reached `ts`, or is unreachable).
    @discardableResult
    public func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp {
        await core.waitForView(atLeast: ts, timeout: timeout)
    }

    /// Runs action `name` and returns its result. Discard the result for the `Void` form.
    ///
    /// An action is never resent: if the connection drops while it runs, the call throws
    /// ``ConvexClientError/Code/connectionLost`` (the action may or may not have run).
    /// - Parameter timeout: this call's deadline instead of ``ConvexClientConfiguration/callTimeout``.
    @discardableResult
    public func action(_ name: String, with args: [String: ConvexValue] = [:], timeout: Duration? = nil)
        async throws(ConvexClientError) -> ConvexValue
    {
        try await core.request(.action, udfPath: name, args: args, timeout: timeout ?? core.configuration.callTimeout)
            .get()
    }

    // MARK: Authentication

    /// Authenticates as a user with a JWT (`nil` clears the identity). Sent at once when connected, and on every
    /// reconnect. A rejected token surfaces as ``ConnectionState/authenticationFailed(message:)`` and as
    /// ``ConvexClientError/Code/authenticationFailed`` errors; the client then waits for new credentials.
    public func setAuth(token: String?) {
        core.setAuth(token.map { .token(.user($0)) } ?? .none, token: token.map { .user($0) }, provider: nil)
    }

    /// Authenticates with a deployment admin key, optionally acting as a user (`UserIdentityAttributes` object).
    public func setAdminAuth(key: String, actingAs identity: ConvexValue? = nil) {
        let token = AuthenticationToken.admin(key, actingAs: identity)
        core.setAuth(.token(token), token: token, provider: nil)
    }

    /// Authenticates with tokens from `provider`, which is called now and before every reconnect (with
    /// `forceRefresh` true once after the deployment rejected a token), so tokens can be refreshed. A second
    /// rejection in a row, or a provider that throws, stops the client with
    /// ``ConnectionState/authenticationFailed(message:)`` instead of retrying forever.
    /// - Throws: ``ConvexClientError/Code/authenticationFailed`` when the provider throws now.
    public func setAuthProvider(_ provider: @escaping ConvexTokenProvider) async throws(ConvexClientError) {
        let jwt: String?
        do {
            jwt = try await provider(false)
        } catch {
            throw ConvexClientError(.authenticationFailed, message: "Token provider failed: \(error)")
        }
        core.setAuth(.provider, token: jwt.map { .user($0) }, provider: provider)
    }

    /// Removes any identity (sends `Authenticate` with token type `None` when connected).
    public func clearAuth() {
        core.setAuth(.none, token: nil, provider: nil)
    }

    // MARK: Connection

    /// The current connection state.
    public var connectionState: ConnectionState { core.connectionState }

    /// The connection state now and at every change, until the client is closed. Each call returns an
    /// independent stream; a slow reader keeps the newest 32 states.
    public var connectionStates: AsyncStream<ConnectionState> { core.connectionStates() }

    /// True while the WebSocket is open (a readiness check).
    public var isConnected: Bool { core.connectionState.isConnected }

    /// Connects if needed and waits until the connection is open.
    /// - Throws: ``ConvexClientError/Code/unreachable`` when it is not open within `timeout`,
    ///   ``ConvexClientError/Code/authenticationFailed`` or ``ConvexClientError/Code/clientClosed``.
    public func waitUntilConnected(timeout: Duration = .seconds(10)) async throws(ConvexClientError) {
        switch await core.waitUntilConnected(timeout: timeout) {
        case .connected:
            return
        case .closed:
            throw ConvexClientError(.clientClosed, message: "The client is closed")
        case .authenticationFailed(let message):
            throw ConvexClientError(.authenticationFailed, message: message)
        case .reconnecting(let reason):
            throw ConvexClientError(.unreachable, message: "Not connected after \(timeout) (last error: \(reason))")
        case .idle, .connecting:
            throw ConvexClientError(.unreachable, message: "Not connected after \(timeout)")
        }
    }

    /// Closes the connection and ends every subscription and pending call (they throw
    /// ``ConvexClientError/Code/clientClosed``). Idempotent.
    public func close() async {
        await core.close()
    }
}
