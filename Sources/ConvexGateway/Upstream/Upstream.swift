import ConvexSyncProtocol
import ConvexValues
import HTTPFields
import Logging

/// What the gateway needs from a Convex deployment for one identity. `ConvexClient` provides it in production; the
/// gateway keeps one per distinct caller identity.
public protocol ConvexUpstream: Sendable {
    /// A new, empty set of live queries on this connection, whose results are delivered transition by transition.
    func makeQuerySet() -> any UpstreamQuerySet
    /// One call of a query, mutation or action, answered within `timeout` (the gateway's one deadline) or failed
    /// with ``UpstreamFailure/timeout(seconds:)`` naming it.
    func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration) async throws(UpstreamFailure)
        -> UpstreamAnswer
    /// Waits until this connection's view of the deployment is at Convex timestamp `ts` or later, asking the
    /// deployment for its latest snapshot while it is not, for at most `timeout`. Returns the view's timestamp then
    /// (below `ts` when the time ran out).
    func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp
    /// Whether the connection to the deployment is up.
    var isConnected: Bool { get }
    /// Waits up to `timeout` for the connection to be up.
    /// - Throws: why it is not: ``UpstreamFailure/unavailable(_:)``, or ``UpstreamFailure/unauthenticated(_:)`` when
    ///   the deployment refused the identity's credentials.
    func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure)
    /// Closes the connection and ends every subscription.
    func close() async
    /// Why the deployment is known unreachable while this connection is not up (a connect attempt of one of the
    /// gateway's connections failed and none has connected since), in plain words without an address; `nil`
    /// otherwise. A request on such a connection is refused at once rather than waiting for it.
    var unreachableCause: String? { get }
    /// Whether the deployment has refused the connection's credentials (its token is forged, or expired): the
    /// connection then serves nothing until it is closed.
    var credentialsRefused: Bool { get }
    /// A page's mutation, run as request `request.requestId` of the page's sync session `request.session` (a
    /// connection of the session's own), so the deployment records it and runs a resend of it once, whichever
    /// gateway replica sends it. Answered within `timeout` as ``call(_:_:args:timeout:)``.
    func mutation(_ function: String, args: ConvexValue, as request: SessionRequest, timeout: Duration)
        async throws(UpstreamFailure) -> UpstreamAnswer
}

/// A mutation of a page's sync session: the session's id (a lowercase UUID the page chose) and the request id the page
/// gave the mutation (a resend carries the same).
public struct SessionRequest: Sendable, Hashable {
    public var session: String
    public var requestId: UInt32

    public init(session: String, requestId: UInt32) {
        self.session = session
        self.requestId = requestId
    }
}

extension ConvexUpstream {
    /// An upstream that cannot tell is never refused.
    public var credentialsRefused: Bool { false }

    /// An upstream that cannot tell waits for its connection as it always did.
    public var unreachableCause: String? { nil }

    /// An upstream without sessions of its own runs a session's mutation as any other: a resend runs again.
    public func mutation(_ function: String, args: ConvexValue, as request: SessionRequest, timeout: Duration)
        async throws(UpstreamFailure) -> UpstreamAnswer
    {
        try await call(.mutation, function, args: args, timeout: timeout)
    }
}

extension ConvexUpstream {
    /// The deployment's refusal of this connection's credentials, if it refused them: why a wait for the view fell
    /// short when it did (a refused connection waits for new credentials, and its view does not move).
    func credentialsRefusal() async -> UpstreamFailure? {
        do throws(UpstreamFailure) {
            try await waitUntilConnected(timeout: .zero)
        } catch {
            if case .unauthenticated = error { return error }
        }
        return nil
    }
}

/// Live queries of one upstream connection, read one upstream transition at a time: the results of every member
/// that one Convex Transition changed arrive together, in one ``UpstreamTransition``.
///
/// A member's first result comes in the first transition that carries it. Function failures arrive as `.failure`
/// results and the member carries on. When the deployment refuses the connection's credentials (its token expired),
/// a last transition gives every member an ``UpstreamFailure/unauthenticated(_:)`` failure and ``transitions`` ends;
/// it also ends when the connection or the set is closed. Either way every member has ended.
public protocol UpstreamQuerySet: Sendable {
    /// Adds a live query under `token` (the caller's name for it, unique in the set).
    func add(_ token: UInt64, _ function: String, args: ConvexValue)
    /// Removes the member `token`.
    func remove(_ token: UInt64)
    /// The members' new results, one element per upstream transition of the connection (with no changes when none
    /// of the members changed), in order. Read it once.
    var transitions: AsyncStream<UpstreamTransition> { get }
    /// Removes every member and ends ``transitions``.
    func close()
}

/// A one-shot call's value, with its Convex timestamp: a query's snapshot, a mutation's commit (`nil` for an action).
public struct UpstreamAnswer: Sendable, Hashable {
    public var value: ConvexValue
    public var ts: ConvexTimestamp?

    public init(value: ConvexValue, ts: ConvexTimestamp? = nil) {
        self.value = value
        self.ts = ts
    }
}

/// The new results of a query set's members that one upstream transition brought (none: the members' results hold
/// at its timestamp too).
public struct UpstreamTransition: Sendable, Hashable {
    /// One member's new result, named by the token its subscriber gave the member when it added it.
    public struct TokenResult: Sendable, Hashable {
        public var token: UInt64
        public var result: UpstreamResult

        public init(token: UInt64, result: UpstreamResult) {
            self.token = token
            self.result = result
        }
    }

    /// The Convex timestamp of the snapshot the results come from.
    public var ts: ConvexTimestamp
    public var changes: [TokenResult]

    @available(*, deprecated, renamed: "TokenResult")
    public typealias Change = TokenResult

    public init(ts: ConvexTimestamp, changes: [TokenResult]) {
        self.ts = ts
        self.changes = changes
    }
}

/// The kind of a one-shot upstream call.
public enum CallKind: String, Sendable, Hashable {
    case query, mutation, action
}

/// One element of a live subscription.
public enum UpstreamResult: Sendable, Hashable {
    case value(ConvexValue)
    case failure(UpstreamFailure)
}

/// Why an upstream call or subscription produced no value.
public enum UpstreamFailure: Error, Sendable, Hashable {
    /// The function threw a `ConvexError`; `data` is what it carried.
    case convexError(message: String, data: ConvexValue)
    /// The deployment has no public function of that name.
    case unknownFunction(message: String)
    /// The arguments did not match the function's validators.
    case invalidArguments(message: String)
    /// The function failed some other way; `message` is the deployment's message.
    case functionFailed(message: String)
    /// The deployment could not be reached.
    case unavailable(String)
    /// The connection dropped while an action ran; it may or may not have taken effect.
    case connectionLost(String)
    /// The deployment did not answer in time.
    case timeout(seconds: Double)
    /// The deployment refused the caller's credentials.
    case unauthenticated(String)
    /// The gateway has no room for the call now (every session connection of the caller's identity is busy).
    case busy(String)
    /// A failure of no kind the gateway knows; the client sees a generic 500, the detail goes to the log only.
    case unexpected(String)
}

extension UpstreamFailure {
    /// Convex's message for a function called as the wrong kind (`Trying to execute a:b as Query, but it is defined
    /// as Mutation.`), with the route that calls it as its kind: the caller used the wrong route, not a wrong name.
    static func routeHint(_ message: String) -> String {
        guard
            let match = message.firstMatch(
                of:
                    /Trying to execute (?<path>[^ ]+) as (Query|Mutation|Action), but it is defined as (?<kind>Query|Mutation|Action)\./
            )
        else { return message }
        let path = match.output.path
        let route =
            switch match.output.kind {
            case "Query": "GET or POST /query/\(path)"
            case "Mutation": "POST /mutation/\(path)"
            default: "POST /action/\(path)"
            }
        return message + " Call it with \(route)."
    }

    /// The one mapping from upstream failures to HTTP statuses (docs/routes-and-errors.md). A failure of no known
    /// kind is logged here with its detail (the client sees a generic 500), and so is an unreachable deployment (the
    /// client sees a 503 without the detail, which names the deployment's address, port and the socket's error),
    /// wherever it is answered: a call, a `GET`, a batch or a stream; with the request's trace when one is bound
    /// (``RequestTrace/current``).
    package func gatewayError(logging logger: Logger) -> GatewayError {
        switch self {
        case .convexError(let message, let data):
            return GatewayError(code: .convexError, message: message, data: data)
        case .unknownFunction(let message):
            return GatewayError(code: .functionNotFound, message: Self.routeHint(message))
        case .invalidArguments(let message):
            return GatewayError(code: .argumentValidation, message: message)
        case .functionFailed(let message):
            return GatewayError(code: .functionFailed, message: message)
        case .unavailable(let detail):
            var metadata: Logger.Metadata = ["error": "\(detail)"]
            RequestTrace.current?.addMetadata(to: &metadata)
            logger.warning("Convex deployment is unreachable", metadata: metadata)
            return .upstreamUnavailable()
        case .connectionLost(let detail):
            return GatewayError(code: .upstreamConnectionLost, message: detail)
        case .timeout(let seconds):
            return .upstreamTimeout(seconds: seconds)
        case .unauthenticated(let detail):
            return .unauthenticated(detail)
        case .busy(let detail):
            return GatewayError(code: .overloaded, message: detail, headers: [(HeaderName.retryAfter, "1")])
        case .unexpected(let detail):
            var metadata: Logger.Metadata = ["error": "\(detail)"]
            RequestTrace.current?.addMetadata(to: &metadata)
            logger.error("unexpected upstream failure", metadata: metadata)
            return .internalError
        }
    }

    /// The function never ran: it is unknown, or its arguments were refused. A fresher function spec may help.
    package var ranNoFunction: Bool {
        switch self {
        case .unknownFunction, .invalidArguments: true
        default: false
        }
    }

    /// A first result that means the stream can never deliver (unknown function, bad arguments, refused
    /// credentials): answered as a plain HTTP error, so an `EventSource` stops instead of reconnecting forever.
    package var refusesStream: Bool {
        switch self {
        case .unknownFunction, .invalidArguments, .unauthenticated: true
        default: false
        }
    }
}
