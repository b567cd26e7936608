import Convex
import ConvexValues
import Foundation
import Logging
import MicroHTTPD

/// Every setting of `convex-gateway`, each declared once: flag, environment variable, help and kind; the default is
/// the value ``GatewaySettings`` starts with. `--help`, the lookup and the documentation check (SettingsDocumentationTests)
/// come from here. To add a setting: add a property (here or in `GatewayConfiguration`), declare it below, and add
/// the row the documentation test asks for to the table in docs/configuration.md.
extension GatewaySettings {
    package static let declarations: [Setting] =
        section(
            .configuration,
            [
                .file(
                    "--config", "GATEWAY_CONFIG", \.configFile,
                    help: "A JSON (`.json`) or YAML (`.yaml`, `.yml`) file of settings whose keys are the options' "
                        + "names without `--` (`port: 8080`); a flag or an environment variable wins over it. An "
                        + "unknown key or a value of the wrong type stops the gateway, naming the key and the file."),
                .value(
                    "--host", "GATEWAY_HOST", \.gateway.host, valueName: "<address>",
                    help: "Numeric IPv4 or IPv6 address to listen on (`0.0.0.0` in a container, `::` for IPv6); "
                        + "`localhost` means `127.0.0.1`.",
                    parse: listeningAddress),
                .integer("--port", "GATEWAY_PORT", \.gateway.port, in: 0...65535, help: "Port (0 picks a free one)."),
                .value(
                    "--convex-url", "CONVEX_URL", \.convexURL, valueName: "<url>", default: "embedded deployment",
                    help: "The Convex deployment URL (`https://<name>.convex.cloud`); without it the gateway starts "
                        + "the embedded local deployment with its demo functions.",
                    parse: deploymentURL),
                .choice(
                    "--format", "GATEWAY_FORMAT", \.gateway.defaultFormat,
                    help: "Output mode of a request without `?format=`."),
                .seconds(
                    "--heartbeat-seconds", "GATEWAY_HEARTBEAT_SECONDS", \.gateway.heartbeatInterval,
                    help: "Seconds between SSE heartbeat comments."),
                .seconds(
                    "--keep-warm-seconds", "GATEWAY_KEEP_WARM_SECONDS", \.gateway.keepWarm,
                    help: "Seconds an upstream subscription outlives its last reader."),
                .seconds(
                    "--upstream-timeout-seconds", "GATEWAY_UPSTREAM_TIMEOUT_SECONDS", \.gateway.upstreamTimeout,
                    help: "Seconds to wait for the deployment's answer before 504."),
                .seconds(
                    "--connect-timeout-seconds", "GATEWAY_CONNECT_TIMEOUT_SECONDS", \.gateway.connectTimeout,
                    help: "Seconds to wait for the upstream connection before 503."),
                .seconds(
                    "--identity-idle-seconds", "GATEWAY_IDENTITY_IDLE_SECONDS", \.gateway.identityIdleTimeout,
                    help: "Seconds before an idle user's upstream connection closes."),
                .integer(
                    "--max-identities", "GATEWAY_MAX_IDENTITIES", \.gateway.maxIdentities, in: 0...1_000_000,
                    note: "as many as `--max-connections`",
                    help: "Signed-in callers (distinct tokens) holding a connection to the deployment at once; a "
                        + "new one beyond it gets 503 `Overloaded` until another has been idle for "
                        + "`--identity-idle-seconds`."),
                .integer(
                    "--max-subscriptions", "GATEWAY_MAX_SUBSCRIPTIONS", \.gateway.maxSubscriptions, in: 1...1_000_000,
                    help:
                        "Live upstream subscriptions. At the limit, a stream or batch `GET` that needs a new one gets "
                        + "503 `Overloaded` at once, and a `GET` of one query gets a one-shot answer."),
                .integer(
                    "--max-subscriptions-per-caller", "GATEWAY_MAX_SUBSCRIPTIONS_PER_CALLER",
                    \.gateway.maxSubscriptionsPerCaller, in: 0...1_000_000, note: "a tenth of `--max-subscriptions`",
                    help:
                        "Live upstream subscriptions one caller (a signed-in identity, else a client address) may have "
                        + "made, so that no caller fills the table. At it, the caller's stream or batch `GET` that "
                        + "needs a new one gets 429 `TooManySubscriptions`, and its `GET` of one query a one-shot "
                        + "answer."),
                .integer(
                    "--max-stream-subscriptions", "GATEWAY_MAX_STREAM_SUBSCRIPTIONS", \.gateway.maxStreamSubscriptions,
                    in: 1...10_000,
                    help: "Subscriptions one multi-subscription stream (`/subscribe?sub.<id>=…`) may hold."),
                .integer(
                    "--max-wait-seconds", "GATEWAY_MAX_WAIT_SECONDS", \.gateway.maxWaitSeconds, in: 0...3600,
                    help: "Longest wait of a long-poll `GET` (`If-None-Match` with `Prefer: wait=<seconds>`); 0: none."),
                .boolean(
                    "--read-your-writes", "GATEWAY_READ_YOUR_WRITES", \.gateway.readYourWrites,
                    help: "Once a mutation committed at `T` is answered, no query answer comes from a snapshot older "
                        + "than `T`, for any caller."),
                .integer(
                    "--threads", "GATEWAY_THREADS", \.gateway.threads, in: 0...256, note: "one per CPU it may use",
                    help: "HTTP worker threads."),
                .seconds(
                    "--drain-delay-seconds", "GATEWAY_DRAIN_DELAY_SECONDS", \.gateway.drainDelay, allowingZero: true,
                    help: "Seconds a stopping gateway (SIGTERM) goes on serving while `/readyz` answers 503 "
                        + "`ShuttingDown`, so that a load balancer takes it out of rotation before it stops accepting "
                        + "connections. Behind a balancer: more than its health check's interval times its fall "
                        + "count."),
                .seconds(
                    "--shutdown-grace-seconds", "GATEWAY_SHUTDOWN_GRACE_SECONDS", \.gateway.shutdownGracePeriod,
                    help: "Seconds a stopping gateway waits, after it stops accepting connections, for the "
                        + "mutations and actions it is running to be answered; one still running then gets 502 "
                        + "`OutcomeUnknown`."),
                .file(
                    "--openapi-file", "GATEWAY_OPENAPI_FILE", \.gateway.openAPIFile, fallback: "openapi/openapi.yaml",
                    fallbackNote: "else the document built into the binary",
                    help: "OpenAPI document served at `/openapi.yaml`."),
                .integer(
                    "--local-port", "CONVEX_LOCAL_PORT", \.localPort, in: 0...65535, note: "picks a free one",
                    help: "Port of the embedded deployment, when it is used."),
                .file(
                    "--local-auth-config", "CONVEX_LOCAL_AUTH_CONFIG", \.localAuthConfig,
                    help:
                        "The embedded deployment's `auth.config` JSON file (`{\"providers\": [...]}`): it then accepts "
                        + "only tokens these providers signed. Without it, any well-formed JWT that has not expired, "
                        + "which the gateway logs as a warning at start. Not with `--convex-url`."),
                .boolean(
                    "--public-demo", "GATEWAY_PUBLIC_DEMO", \.publicDemo,
                    help: "Let the gateway serve the embedded deployment, whose demo functions anyone may call, on "
                        + "an address other than loopback (such as `0.0.0.0`, the container's); without it the "
                        + "gateway refuses to start so. Not needed with `--convex-url` or on a loopback address."),
                .secret(
                    "--admin-key", "CONVEX_ADMIN_KEY", \.adminKey, alternative: "CONVEX_ADMIN_KEY_FILE",
                    default: "none; a random key for the embedded deployment",
                    help: "The deployment's admin key, used only to fetch its function spec for typed inputs. As a "
                        + "flag it shows in the process list (`ps`), which the gateway logs as a warning: prefer "
                        + "`CONVEX_ADMIN_KEY` or `--admin-key-file`."),
                .secretFile(
                    "--admin-key-file", "CONVEX_ADMIN_KEY_FILE", \.adminKey, alternative: "CONVEX_ADMIN_KEY",
                    default: "none", help: "A file holding the deployment's admin key."),
                .choice("--log-level", "LOG_LEVEL", \.logLevel, help: "swift-log level."),
                .choice(
                    "--log-format", "LOG_FORMAT", \.logFormat,
                    help: "How each log line is written: swift-log's text, or one JSON object per line with `time`, "
                        + "`level`, `message`, `label`, `source` and the metadata flattened."),
                .choice(
                    "--access-log", "GATEWAY_ACCESS_LOG", \.gateway.accessLog,
                    help: "One line at `info` per answered request, and one when an event stream ends (method, route, "
                        + "function, status, bytes, duration, request id, trace and span ids, whether the caller "
                        + "signed in; never a credential, the query string or arguments). Written only when "
                        + "`--log-level` admits `info`."),
                .value(
                    "--otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", \.gateway.otlpEndpoint, valueName: "<url>",
                    default: "none; no export",
                    help: "OpenTelemetry: each request's span (method, route, function, status, upstream time; in "
                        + "the caller's trace when it sent a `traceparent`) is posted as OTLP/HTTP JSON to "
                        + "`<url>/v1/traces` (`http://collector:4318`), batched every second.",
                    parse: otlpEndpoint),
            ])
        + section(
            .access,
            [
                .secretFile(
                    "--api-key-file", "GATEWAY_API_KEY_FILE", \.gateway.access.apiKey, alternative: "GATEWAY_API_KEY",
                    default: "no key",
                    help: "A file holding the gateway API key: requests must carry it in `X-API-Key`, else 401 "
                        + "`InvalidAPIKey`."),
                .secret(
                    nil, "GATEWAY_API_KEY", \.gateway.access.apiKey, alternative: "GATEWAY_API_KEY_FILE",
                    default: "no key",
                    help: "The gateway API key itself; environment only, since a flag would show in `ps`."),
                .list(
                    "--allow-functions", "GATEWAY_ALLOW_FUNCTIONS", \.gateway.access.functions.allow,
                    valueName: "<globs>", default: "all",
                    help: "Comma-separated function globs (`messages:*,admin/**`); only matching functions are "
                        + "reachable.",
                    parse: { try FunctionPattern.list($0) }),
                .list(
                    "--deny-functions", "GATEWAY_DENY_FUNCTIONS", \.gateway.access.functions.deny,
                    valueName: "<globs>", default: "none",
                    help: "Comma-separated function globs refused as if unknown; wins over the allowlist.",
                    parse: { try FunctionPattern.list($0) }),
                .list(
                    "--cors-origins", "GATEWAY_CORS_ORIGINS", \.gateway.access.cors.origins, valueName: "<origins>",
                    default: "CORS off",
                    help: "Comma-separated origins (`https://app.example.com`) or `*`.",
                    parse: { try CORSPolicy.origins($0) }),
                .boolean(
                    "--cors-allow-credentials", "GATEWAY_CORS_ALLOW_CREDENTIALS",
                    \.gateway.access.cors.allowCredentials,
                    help: "Send `Access-Control-Allow-Credentials: true` (the origin is then echoed, never `*`)."),
                .integer(
                    "--cors-max-age-seconds", "GATEWAY_CORS_MAX_AGE_SECONDS", \.gateway.access.cors.maxAgeSeconds,
                    in: 0...86_400, help: "Seconds browsers may cache a preflight."),
                .list(
                    "--cors-expose-headers", "GATEWAY_CORS_EXPOSE_HEADERS", \.gateway.access.cors.exposedHeaders,
                    valueName: "<headers>", help: "Comma-separated response headers pages may read.",
                    parse: { try CORSPolicy.headerNames($0) }),
                .value(
                    "--auth-cookie", "GATEWAY_AUTH_COOKIE", \.gateway.access.authCookie, valueName: "<name>",
                    default: "no cookie",
                    help: "A cookie holding the caller's JWT, read when a request has no `Authorization` header (on "
                        + "every function route and `POST /stream-tickets`)."
                ) { text, name throws(SettingError) in
                    guard CookieHeader.isValidName(text) else {
                        throw SettingError("\(name) must be a cookie name (letters, digits, - _ . and the like)")
                    }
                    return text
                },
                .value(
                    "--ticket-key-file", "GATEWAY_TICKET_KEY_FILE", \.gateway.access.ticketKey, valueName: "<path>",
                    secret: true, default: "a random key per process",
                    help: "A file holding at least 32 bytes of secret material, from which the key that seals "
                        + "stream tickets is derived; replicas given the same file accept each other's tickets."
                ) { text, name throws(SettingError) in
                    do {
                        return try StreamTicketKey.load(file: text, name: name)
                    } catch {
                        throw SettingError("\(error)")
                    }
                },
                .seconds(
                    "--ticket-max-lifetime-seconds", "GATEWAY_TICKET_MAX_LIFETIME_SECONDS",
                    \.gateway.access.ticketMaxLifetime,
                    help: "Seconds a stream ticket is valid at most (less when the token's `exp` comes sooner)."),
                .number(
                    "--rate-limit", "GATEWAY_RATE_LIMIT", \.gateway.access.rateLimit, in: 0...1_000_000, note: "off",
                    help: "Requests per second per client address on the function routes."),
                .integer(
                    "--rate-limit-burst", "GATEWAY_RATE_LIMIT_BURST", \.gateway.access.rateLimitBurst,
                    in: 0...1_000_000, note: "twice the rate", help: "Requests a quiet client may send at once."),
                .integer(
                    "--connection-memory-bytes", "GATEWAY_CONNECTION_MEMORY_BYTES",
                    \.gateway.access.connectionMemoryLimit, in: 4096...(16 << 20),
                    help: "Memory pool per connection; the request line and headers must fit (else 414/431)."),
                .integer(
                    "--idle-timeout-seconds", "GATEWAY_IDLE_TIMEOUT_SECONDS", \.gateway.access.idleTimeoutSeconds,
                    in: 0...86_400, help: "Seconds of silence before a connection is closed (0: never)."),
                .integer(
                    "--max-body-bytes", "GATEWAY_MAX_BODY_BYTES", \.gateway.maxBodyBytes, in: 0...(1 << 30),
                    help: "Largest request body before 413 (16 MiB: the largest arguments Convex takes)."),
                .integer(
                    "--max-body-bytes-in-flight", "GATEWAY_MAX_BODY_BYTES_IN_FLIGHT", \.gateway.maxBodyBytesInFlight,
                    in: 0...(1 << 40),
                    help: "Request-body bytes held at once over every connection, until their requests are "
                        + "answered; a body that does not fit gets 503 `Overloaded` with `Retry-After`. Never less "
                        + "than `--max-body-bytes`."),
                .integer(
                    "--max-connections", "GATEWAY_MAX_CONNECTIONS", \.gateway.maxConnections, in: 1...1_000_000,
                    help: "Simultaneous HTTP connections before 503."),
                .integer(
                    "--max-streams", "GATEWAY_MAX_STREAMS", \.gateway.maxStreams, in: 0...1_000_000,
                    note: "nine tenths of the connections",
                    help:
                        "Open event streams before a new one gets 503, so that calls and GETs always find a connection."
                ),
                .integer(
                    "--max-streams-per-client", "GATEWAY_MAX_STREAMS_PER_CLIENT", \.gateway.maxStreamsPerClient,
                    in: 0...1_000_000, note: "a tenth of `--max-streams`",
                    help: "Open event streams one client (a signed-in user, else a client address) may hold; a new "
                        + "one beyond it gets 429 `TooManyStreams`. Waiting long-polls have a share of the same size."),
                .integer(
                    "--max-calls-per-client", "GATEWAY_MAX_CALLS_PER_CLIENT", \.gateway.maxCallsPerClient,
                    in: 1...1_000_000,
                    help: "Mutations, actions and posted queries one client may have running at once; one more gets "
                        + "429 `TooManyCalls`."),
                .integer(
                    "--max-connections-per-client", "GATEWAY_MAX_CONNECTIONS_PER_CLIENT",
                    \.gateway.maxConnectionsPerClient, in: 0...1_000_000, note: "a tenth of `--max-connections`",
                    help: "Connections one client address may hold open; one more is answered 429 "
                        + "`TooManyConnections` at once and closed. Behind a proxy, every client has its address."),
                .integer(
                    "--max-body-bytes-per-client", "GATEWAY_MAX_BODY_BYTES_PER_CLIENT",
                    \.gateway.maxBodyBytesPerClient, in: 0...(1 << 40), note: "half of `--max-body-bytes-in-flight`",
                    help: "Request-body bytes one client address may hold at once; a body beyond it gets 429 "
                        + "`TooManyBodyBytes`. Never less than `--max-body-bytes`."),
                .integer(
                    "--header-timeout-seconds", "GATEWAY_HEADER_TIMEOUT_SECONDS", \.gateway.headerTimeoutSeconds,
                    in: 0...86_400,
                    help: "Seconds a connection's first request line and headers may take to arrive; later gets 408 "
                        + "`RequestTimeout` and the connection closes (0: no deadline)."),
                .integer(
                    "--body-timeout-seconds", "GATEWAY_BODY_TIMEOUT_SECONDS", \.gateway.bodyTimeoutSeconds,
                    in: 0...86_400,
                    help: "A request body must come at 1 KiB in every period of this many seconds at least, or get 408 "
                        + "`RequestTimeout` and the connection closes (0: no minimum pace)."),
                .integer(
                    "--max-identities-per-client", "GATEWAY_MAX_IDENTITIES_PER_CLIENT",
                    \.gateway.maxIdentitiesPerClient, in: 0...1_000_000, note: "a tenth of `--max-identities`",
                    help: "Signed-in callers one client address may hold connections to the deployment for; a new "
                        + "one beyond it gets 429 `TooManyIdentities`."),
                .list(
                    "--allowed-hosts", "GATEWAY_ALLOWED_HOSTS", \.gateway.access.allowedHosts, valueName: "<names>",
                    default: "loopback names on a loopback address, else any",
                    help: "Comma-separated `Host` names answered besides loopback ones (`*`: any); others get 403 "
                        + "`HostNotAllowed`, a request without `Host` 400.",
                    parse: { text in
                        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                            !$0.isEmpty
                        }
                    }),
                .list(
                    "--trusted-proxies", "GATEWAY_TRUSTED_PROXIES", \.gateway.access.trustedProxies,
                    valueName: "<networks>", default: "none",
                    help: "Comma-separated addresses or CIDR networks of proxies whose `X-Forwarded-For` names the "
                        + "client, for the shares per client address.",
                    parse: { text throws in
                        let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                        for entry in entries {
                            if let problem = ClientIdentification.invalidProxy(entry) {
                                throw SettingValueError(problem)
                            }
                        }
                        return entries
                    }),
            ])

    /// The address to listen on, checked before anything starts: libmicrohttpd binds numeric addresses only, so a
    /// name other than `localhost` is refused here rather than after the embedded deployment has started.
    static func listeningAddress(_ text: String, _ name: String) throws(SettingError) -> String {
        if text.lowercased() == "localhost" { return "127.0.0.1" }
        guard HTTPServerConfiguration.isNumericAddress(text) else {
            throw SettingError(
                "\(name) must be a numeric IPv4 or IPv6 address (127.0.0.1, 0.0.0.0, ::) or localhost, not '\(printable(text))'"
            )
        }
        return text
    }

    /// The deployment URL, checked with the other settings, so a mistake gets the same `--help` pointer.
    static func deploymentURL(_ text: String, _ name: String) throws(SettingError) -> String? {
        do {
            _ = try ConvexClient.syncURL(for: text)
        } catch {
            let message = error.message
            throw SettingError(name + ": " + message)
        }
        return text
    }

    /// The OTLP/HTTP endpoint: an http(s) URL without a query or fragment, since `/v1/traces` is added to its path.
    static func otlpEndpoint(_ text: String, _ name: String) throws(SettingError) -> String? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", components.host?.isEmpty == false, components.query == nil,
            components.fragment == nil
        else {
            throw SettingError(
                "\(name) must be an http or https URL without a query (http://collector:4318), not '\(RedactedURL(text))'"
            )
        }
        return text
    }

    private static func section(_ section: Setting.Section, _ settings: [Setting]) -> [Setting] {
        settings.map { setting in
            var setting = setting
            setting.section = section
            return setting
        }
    }
}
