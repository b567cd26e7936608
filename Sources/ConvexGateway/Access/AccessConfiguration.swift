import HTTPFields

/// The gateway's access controls and request limits. Every control is off by default except the limits; the
/// `convex-gateway` executable fills this from flags and environment variables, as declared in
/// `Settings/GatewaySettings+Declarations.swift` (docs/configuration.md, "Access controls and limits").
public struct AccessConfiguration: Sendable {
    /// When set, every request except `/healthz`, `/readyz`, `/openapi.yaml` (but for its functions document),
    /// `/client.js`, the demo page `/` and CORS preflights must carry it in `X-API-Key`; otherwise 401 `InvalidAPIKey`.
    public var apiKey: Secret?
    /// Which functions callers may reach; a refused function answers exactly as an unknown one (404).
    public var functions = FunctionFilter()
    /// Cross-origin access for browsers; off when no origin is configured.
    public var cors = CORSPolicy()
    /// Sustained requests per second per client IP address on the function routes; 0 turns the limit off.
    public var rateLimit: Double = 0
    /// Requests a quiet client may send at once; 0 means twice the rate (at least 1).
    public var rateLimitBurst = 0
    /// libmicrohttpd's memory pool per connection: the request line and all headers must fit in it (beyond it:
    /// 414 for a long URL, 431 for large headers). The response write buffer shares it. 12 KiB admits header
    /// blocks of about 11 KiB and keeps an idle event stream under 16 KiB of memory (BENCHMARKS.md).
    public var connectionMemoryLimit = 12 * 1024
    /// A connection that sends or receives nothing for this long is closed: a slow sender cannot hold a connection
    /// with a half-sent request. Open event streams are exempt. Whole seconds; 0 means never.
    public var idleTimeoutSeconds = 30

    /// The cookie a request without `Authorization` takes its bearer JWT from (an HTTP token such as `convex_jwt`);
    /// `nil` reads no cookie.
    public var authCookie: String?
    /// The key stream tickets are sealed with; `nil` makes a random one per process, so tickets then open only on
    /// the gateway that issued them. Give replicas the same key to let any of them open a ticket.
    public var ticketKey: StreamTicketKey?
    /// The longest a stream ticket is valid; a token's earlier `exp` shortens it.
    public var ticketMaxLifetime = Duration.seconds(3600)

    /// `Host` names the gateway answers besides loopback ones (`*`: any); empty: loopback names only on a loopback
    /// listening address, any name on another (Access/HostCheck.swift).
    public var allowedHosts: [String] = []

    /// Proxies (addresses or CIDR networks) whose `X-Forwarded-For` names the client, for the shares per client
    /// address (Access/ClientIdentification.swift); empty: every client is its TCP peer.
    public var trustedProxies: [String] = []

    /// The header that carries the gateway API key.
    public static let apiKeyHeader = HeaderName.xAPIKey

    public init() {}

    /// The burst actually used.
    var effectiveBurst: Int {
        rateLimitBurst > 0 ? rateLimitBurst : max(1, Int((rateLimit * 2).rounded(.up)))
    }
}
