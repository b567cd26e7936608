import ConvexValues

/// Everything a gateway instance is configured with. The `convex-gateway` executable fills it from flags, then
/// environment variables, then these defaults; its settings are declared in `Settings/GatewaySettings+Declarations.swift`
/// (docs/configuration.md).
public struct GatewayConfiguration: Sendable {
    /// Address to listen on.
    public var host = "127.0.0.1"
    /// Port to listen on; 0 picks a free one.
    public var port = 8080
    /// Output mode when a request has no `?format=`.
    public var defaultFormat = OutputFormat.plain
    /// Interval of the SSE heartbeat comment.
    public var heartbeatInterval = Duration.seconds(15)
    /// How long an upstream subscription stays open after its last reader leaves.
    public var keepWarm = Duration.seconds(10)
    /// How long a call may wait for the deployment's answer before the gateway answers 504.
    public var upstreamTimeout = Duration.seconds(30)
    /// How long a request waits for the upstream connection to come up before the gateway answers 503.
    public var connectTimeout = Duration.seconds(5)
    /// A user's upstream connection closes after this long without requests or subscriptions.
    public var identityIdleTimeout = Duration.seconds(60)
    /// Upper bound on the signed-in identities (distinct tokens) holding an upstream connection at once; a request
    /// of a new one beyond it gets 503 `Overloaded`. Each is a socket, opened for any well-formed token before the
    /// deployment has judged it. 0 means as many as ``maxConnections``.
    public var maxIdentities = 0
    /// The bound on identities in force (``maxIdentities``, or its default).
    public var effectiveMaxIdentities: Int { maxIdentities > 0 ? maxIdentities : maxConnections }
    /// Upper bound on live upstream subscriptions: at it, a stream or batch `GET` that needs a new one gets 503, a
    /// `GET` of one query a one-shot answer.
    public var maxSubscriptions = 10_000
    /// Upper bound on the live upstream subscriptions one caller (a signed-in identity, else a client address) has
    /// made, so that no caller fills the table: at it, its stream or batch `GET` that needs a new one gets 429, its
    /// `GET` of one query a one-shot answer. 0 means a tenth of ``maxSubscriptions``.
    public var maxSubscriptionsPerCaller = 0
    /// The limit per caller in force (``maxSubscriptionsPerCaller``, or its default), never above
    /// ``maxSubscriptions``.
    public var effectiveMaxSubscriptionsPerCaller: Int {
        let limit = maxSubscriptionsPerCaller > 0 ? maxSubscriptionsPerCaller : maxSubscriptions / 10
        return max(1, min(limit, maxSubscriptions))
    }
    /// Upper bound on the subscriptions of one multi-subscription stream (`/subscribe?sub.<id>=…`).
    public var maxStreamSubscriptions = 100
    /// Longest a `GET` with `If-None-Match` and `Prefer: wait=<seconds>` waits for a change (a long-poll); 0: never.
    public var maxWaitSeconds = 30
    /// Read-your-writes on this gateway: once it has answered a mutation committed at `T`, no query answer comes from
    /// a snapshot older than `T` (ReadYourWrites/SnapshotFloor.swift).
    public var readYourWrites = true
    /// Simultaneous HTTP connections; more get 503.
    public var maxConnections = 10_000
    /// Open event streams; a new one beyond it gets 503 `Overloaded`. 0 means nine tenths of ``maxConnections``, so
    /// that streams never take the connections calls and `GET`s need. Never more than ``maxConnections`` − 1.
    public var maxStreams = 0
    /// The stream limit in force (``maxStreams``, or its default).
    public var effectiveMaxStreams: Int {
        let limit = maxStreams > 0 ? maxStreams : maxConnections * 9 / 10
        return max(1, min(limit, maxConnections - 1))
    }
    /// Event streams one client (a signed-in user, else a client address: ``ClientKey``) may hold open at once; a new
    /// one beyond it gets 429 `TooManyStreams`. 0 means a tenth of the stream limit, so that one address cannot take
    /// every stream. Never more than the stream limit.
    public var maxStreamsPerClient = 0
    /// The limit per client in force (``maxStreamsPerClient``, or its default).
    public var effectiveMaxStreamsPerClient: Int {
        let limit = maxStreamsPerClient > 0 ? maxStreamsPerClient : effectiveMaxStreams / 10
        return max(1, min(limit, effectiveMaxStreams))
    }
    /// Mutations, actions and posted queries one client may have running at once; one more gets 429 `TooManyCalls`.
    /// Convex runs at most 1,000 actions at once on one connection and closes it past that, and every anonymous caller
    /// shares one: so a client's share stays well below it.
    public var maxCallsPerClient = 100
    /// Actions the gateway runs at once on one upstream connection (one identity's, or the anonymous callers' one):
    /// below Convex's own bound, 1,000, past which it closes the connection and fails every call on it. One more gets
    /// 503 `Overloaded`. Not a setting: tests lower it.
    package var maxActionsPerConnection = 900
    /// Connections one client address may hold open at once; one more is answered 429 `TooManyConnections` at once
    /// and closed. 0 means a tenth of ``maxConnections``.
    public var maxConnectionsPerClient = 0
    /// The limit per address in force (``maxConnectionsPerClient``, or its default; one at or above
    /// ``maxConnections`` leaves only that).
    public var effectiveMaxConnectionsPerClient: Int {
        max(1, maxConnectionsPerClient > 0 ? maxConnectionsPerClient : maxConnections / 10)
    }
    /// Request-body bytes one client address may hold at once (a share of ``maxBodyBytesInFlight``); a body beyond it
    /// gets 429 `TooManyBodyBytes`. 0 means half of the bodies in flight. Never less than ``maxBodyBytes``.
    public var maxBodyBytesPerClient = 0
    /// The share in force (``maxBodyBytesPerClient``, or its default).
    public var effectiveMaxBodyBytesPerClient: Int {
        max(maxBodyBytes, maxBodyBytesPerClient > 0 ? maxBodyBytesPerClient : effectiveMaxBodyBytesInFlight / 2)
    }
    /// Seconds a connection's first request line and headers may take to arrive, from the connection; later ones get
    /// 408 `RequestTimeout` and the connection closes. 0: no deadline (the idle timeout alone).
    public var headerTimeoutSeconds = 10
    /// A request body must come at a pace of at least 1 KiB in every period of this many seconds, or get 408
    /// `RequestTimeout` and the connection closes. 0: no minimum pace (the idle timeout alone).
    public var bodyTimeoutSeconds = 10
    /// Signed-in identities one client address may hold a connection to the deployment for at once; a new one beyond
    /// it gets 429 `TooManyIdentities`. 0 means a tenth of the identity limit.
    public var maxIdentitiesPerClient = 0
    /// The limit per address in force (``maxIdentitiesPerClient``, or its default), never above the identity limit.
    public var effectiveMaxIdentitiesPerClient: Int {
        let limit = maxIdentitiesPerClient > 0 ? maxIdentitiesPerClient : effectiveMaxIdentities / 10
        return max(1, min(limit, effectiveMaxIdentities))
    }
    /// Largest request body accepted; larger gets 413. 16 MiB: Convex's own limit on a function's arguments.
    public var maxBodyBytes = 16 << 20
    /// The most request-body bytes held at once over every connection, from their first byte until their request is
    /// answered: a body that does not fit beside the others gets 503 `Overloaded` with `Retry-After` (before it is
    /// read when its `Content-Length` says so). Bounds the memory bodies take, several times their size while they
    /// are parsed. Never less than ``maxBodyBytes`` (``effectiveMaxBodyBytesInFlight``).
    public var maxBodyBytesInFlight = 32 << 20
    /// The bound on bodies in flight in force: ``maxBodyBytesInFlight``, raised to ``maxBodyBytes`` if smaller, so
    /// that a body of the largest size can always be accepted.
    public var effectiveMaxBodyBytesInFlight: Int { max(maxBodyBytesInFlight, maxBodyBytes) }
    /// Worker threads of the HTTP server; 0 means one per CPU the process may use (its affinity mask and CPU quota).
    public var threads = 0
    /// At shutdown, how long the gateway goes on serving as before while `/readyz` answers 503 `ShuttingDown`, so that
    /// a load balancer's health check takes it out of rotation before it stops accepting connections.
    public var drainDelay = Duration.zero
    /// At shutdown, after the port closes: how long mutations and actions already running get to be answered (and
    /// ended streams and answers to reach their clients).
    public var shutdownGracePeriod = Duration.seconds(10)
    /// Path of the OpenAPI document served at `/openapi.yaml`.
    public var openAPIFile: String?
    /// Without ``openAPIFile``, serve the document built into the binary (`convex-gateway` does); otherwise
    /// `/openapi.yaml` is a 404.
    public var servesBuiltInOpenAPI = false
    /// API key, function allow/deny lists, CORS, rate limit and connection limits (Access/AccessConfiguration.swift).
    public var access = AccessConfiguration()
    /// Typed inputs (Typed/): where to fetch the deployment's function spec; `nil` leaves arguments as sent.
    public var functionSpec: FunctionSpecSource?

    /// Whether `GET /` serves the demo page (ServedFiles/DemoPage.swift), which calls the embedded deployment's demo functions:
    /// `convex-gateway` turns it on when it starts that deployment. Off, `/` is a 404 like any unknown path.
    public var demoPage = false

    /// Whether every answered request, and every stream's end, is logged at `info` (Basics/AccessLog.swift).
    public var accessLog = AccessLogMode.on

    /// The OTLP/HTTP endpoint (`http://collector:4318`) each request's span is exported to, as JSON to
    /// `<endpoint>/v1/traces` (Tracing/SpanExporter.swift); `nil` exports nothing.
    public var otlpEndpoint: String?

    /// The version and commit `/metrics` reports (`convex_gateway_build_info`); `convex-gateway` sets its build's.
    public var build = BuildInfo()

    /// Whether the hot path answers `GET`s of remembered targets (Pipeline/HotPath.swift); off only to compare it with
    /// full handling.
    package var hotPath = true

    public init() {}
}
