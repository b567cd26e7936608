import ConvexValues
import HTTPFields
import Synchronization

/// The gateway's own routes: health, readiness, metrics, the OpenAPI documents, `/client.js` and stream tickets.
struct SystemRoutes: Sendable {
    let metrics: GatewayMetrics
    let pool: UpstreamPool
    let credentials: CallerCredentials
    let functionSpecs: FunctionSpecStore?
    /// `--allow-function`/`--deny-function`: the functions document lists only what callers may call.
    let functionFilter: FunctionFilter
    /// `--openapi-file`: the document served at `/openapi.yaml`, read once at start.
    let openAPIDocument: [UInt8]?
    /// Set when the gateway starts to stop: `/readyz` fails from then on.
    let drain = DrainSignal()

    /// `GET /health`: the process answers.
    func health() -> GatewayResponse {
        .json(Array(#"{"status":"ok"}"#.utf8))
    }

    /// `GET /ready`: the gateway is not stopping, and the anonymous upstream connection is up.
    /// - Throws: 503 `ShuttingDown` once the gateway has begun to stop; 503 `UpstreamUnavailable` when the connection
    ///   does not come up within a second, or at once, saying why, while the deployment is known unreachable.
    func readiness() async throws(GatewayError) -> GatewayResponse {
        if drain.started { throw .shuttingDown }
        if let cause = pool.anonymous?.unreachableCause {
            var error = GatewayError.deploymentUnreachable
            error.message = "Not ready: the Convex deployment is unreachable: \(cause)"
            // The connection retries by itself; asked here too, so that a pool without requests keeps trying.
            _ = try? pool.upstream(for: .anonymous)
            throw error
        }
        let (_, upstream) = try pool.upstream(for: .anonymous)  // never refused: the anonymous one is not counted
        do {
            try await upstream.waitUntilConnected(timeout: .seconds(1))
            return .json(Array(#"{"status":"ready"}"#.utf8))
        } catch {
            throw .upstreamUnavailable()
        }
    }

    /// `GET /metrics`: the Prometheus text.
    func metricsPage() -> GatewayResponse {
        GatewayResponse(
            status: 200, headers: [(HeaderName.contentType, "text/plain; version=0.0.4; charset=utf-8")],
            body: metrics.render()
        )
    }

    /// `GET /openapi.yaml`: the configured document, or with `functions=1` the deployment's (Typed/FunctionOpenAPI.swift).
    /// - Throws: 404 when the document asked for is not available.
    func openAPI(_ request: ParsedRequest) throws(GatewayError) -> GatewayAnswer {
        if request.wantsFunctionsDocument {
            // The functions document is made from the function spec: once its first fetch is done.
            guard let specs = functionSpecs, specs.firstFetchPending else {
                return .now(try functionsDocument(request.format))
            }
            return .later { [self] () async throws(GatewayError) -> GatewayOutcome in
                await specs.waitForFirstFetch()
                return .response(try functionsDocument(request.format))
            }
        }
        guard let document = openAPIDocument else {
            throw GatewayError(code: .routeNotFound, message: "The OpenAPI document is not available on this gateway")
        }
        return .now(
            GatewayResponse(status: 200, headers: [(HeaderName.contentType, "application/yaml")], body: document))
    }

    /// The per-deployment document (JSON text, which is YAML 1.2), or 404 without a function spec.
    private func functionsDocument(_ format: OutputFormat) throws(GatewayError) -> GatewayResponse {
        guard let spec = functionSpecs?.current else {
            throw GatewayError(
                code: .routeNotFound,
                message:
                    "No function spec is available; configure the deployment's admin key (--admin-key) to get the functions document"
            )
        }
        let document = FunctionOpenAPI.document(spec, format: format, include: functionFilter.permits)
        return GatewayResponse(
            status: 200, headers: [(HeaderName.contentType, "application/yaml")], body: document.json(mode: .plain))
    }

    /// `POST /stream-tickets`: 201 with a ticket for the caller's token (Access/StreamTickets.swift).
    /// - Throws: 401 without a token, or for one a ticket cannot be made from.
    func streamTicket(for request: ParsedRequest) throws(GatewayError) -> GatewayResponse {
        guard case .bearer(let token) = request.identity else {
            throw GatewayError.unauthenticated(
                "A stream ticket needs the caller's token: send 'Authorization: Bearer <JWT>' or the auth cookie")
        }
        let issued = try credentials.tickets.issue(for: token, now: credentials.now())
        // Written out: `expiresAt` is a whole number of milliseconds, never a float's exponent form.
        let body =
            #"{"ticket":"# + String(decoding: ConvexValue.string(issued.ticket).convexJSON(), as: UTF8.self)
            + #","expiresAt":\#(issued.expiresAt)}"#
        var response = GatewayResponse.json(Array(body.utf8), status: 201)
        response.headers.append((HeaderName.cacheControl, "no-store"))
        return response
    }
}

/// Whether the gateway has begun to stop (``Gateway/shutdown()``): shared by the copies of ``SystemRoutes``.
final class DrainSignal: Sendable {
    private let flag = Atomic<Bool>(false)

    var started: Bool { flag.load(ordering: .acquiring) }

    /// Marks the start of the drain.
    func begin() {
        flag.store(true, ordering: .releasing)
    }
}
