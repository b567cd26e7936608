import ConvexValues
import Foundation
import Logging

/// The gateway's behaviour, independent of the HTTP server: routing, argument handling, the subscription hub, the
/// upstream connections and the mapping of every failure to one error shape.
public final class GatewayCore: Sendable {
    public let configuration: GatewayConfiguration
    public let metrics: GatewayMetrics
    public let hub: SubscriptionHub
    public let pool: UpstreamPool
    /// API key, CORS, rate limit and function allow/deny lists (Access/).
    public let access: AccessControl
    let logger: Logger
    private let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    private let openAPIDocument: [UInt8]?
    /// Typed inputs (Typed/): the deployment's function spec, when configured.
    public let functionSpecs: FunctionSpecStore?
    /// Remembered hot `GET` targets (HotQueries.swift).
    let hotQueries: HotQueries

    public init(
        configuration: GatewayConfiguration,
        logger: Logger,
        render: @escaping @Sendable (ConvexValue, OutputFormat) -> [UInt8],
        upstreamFactory: @escaping @Sendable (UpstreamIdentity, GatewayMetrics) -> any ConvexUpstream
    ) {
        self.configuration = configuration
        self.logger = logger
        self.render = render
        let metrics = GatewayMetrics()
        self.metrics = metrics
        self.hotQueries = HotQueries(metrics: metrics)
        self.hub = SubscriptionHub(
            keepWarm: configuration.keepWarm, maxSubscriptions: configuration.maxSubscriptions, metrics: metrics,
            logger: logger, render: render)
        let access = AccessControl(configuration: configuration.access)
        self.access = access
        self.pool = UpstreamPool(idleTimeout: configuration.identityIdleTimeout, logger: logger) { identity in
            access.filter(upstreamFactory(identity, metrics))
        }
        self.openAPIDocument = configuration.openAPIFile.flatMap { FileManager.default.contents(atPath: $0) }.map { Array($0) }
        // Typed inputs (Typed/): fetch the function spec once at start.
        self.functionSpecs = configuration.functionSpec.map { FunctionSpecStore(source: $0, logger: logger) }
        functionSpecs?.start()
    }

    // MARK: Routing

    enum Route: Equatable {
        case query(FunctionPath)
        case mutation(FunctionPath)
        case action(FunctionPath)
        case subscribe(FunctionPath)
        case health, ready, metrics, openAPI

        static let queryTemplate = "/query/{function}"

        /// The route's template, used as the metrics label.
        var template: String {
            switch self {
            case .query: Self.queryTemplate
            case .mutation: "/mutation/{function}"
            case .action: "/action/{function}"
            case .subscribe: "/subscribe/{function}"
            case .health: "/healthz"
            case .ready: "/readyz"
            case .metrics: "/metrics"
            case .openAPI: "/openapi.yaml"
            }
        }
    }

    /// Routes a path. `nil` route with an error means the path matched a function route but the function path is
    /// bad (400), or matched nothing (404).
    static func route(rawPath: String) throws(GatewayError) -> Route {
        switch rawPath {
        case "/healthz": return .health
        case "/readyz": return .ready
        case "/metrics": return .metrics
        case "/openapi.yaml": return .openAPI
        default: break
        }
        for (prefix, make) in [
            ("/query/", Route.query), ("/mutation/", Route.mutation), ("/action/", Route.action),
            ("/subscribe/", Route.subscribe),
        ] as [(String, (FunctionPath) -> Route)] where rawPath.hasPrefix(prefix) {
            let encoded = rawPath.dropFirst(prefix.count)
            return make(try FunctionPath(parsing: try percentDecodeFunctionPath(encoded)))
        }
        throw GatewayError.routeNotFound(printable(rawPath))
    }

    /// Percent-decodes a function path taken from the URL. An encoded `/` (`%2F`) is refused rather than silently
    /// turned into a module separator.
    static func percentDecodeFunctionPath(_ text: Substring) throws(GatewayError) -> String {
        var bytes: [UInt8] = []
        var it = Array(text.utf8)[...]
        while let b = it.popFirst() {
            guard b == UInt8(ascii: "%") else {
                bytes.append(b)
                continue
            }
            guard let h = it.popFirst(), let l = it.popFirst(), let hi = hexDigitValue(h), let lo = hexDigitValue(l) else {
                throw GatewayError.badRequest("Malformed percent-encoding in the function path", code: .invalidFunctionPath)
            }
            let decoded = hi << 4 | lo
            if decoded == UInt8(ascii: "/") {
                throw GatewayError.badRequest(
                    "Function path contains an encoded '/' (%2F); write module separators as a plain '/'",
                    code: .invalidFunctionPath)
            }
            bytes.append(decoded)
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw GatewayError.badRequest("Function path is not valid UTF-8", code: .invalidFunctionPath)
        }
        return string
    }

    // MARK: Handling

    /// Decides what to do with a request. Runs on the HTTP server's thread: it never blocks, and answers a `GET` of a
    /// live subscription's result at once.
    public func handle(_ request: GatewayRequest) -> GatewayHandling {
        // Access controls (Access/AccessControl.swift): CORS origin and preflight, API key, rate limit.
        if let screened = access.screen(request) {
            let template = (try? Self.route(rawPath: request.rawPath))?.template ?? "unmatched"
            return .respond(finish(request, template: template, screened))
        }
        let route: Route
        do {
            route = try Self.route(rawPath: request.rawPath)
        } catch {
            return .respond(finish(request, template: "unmatched", errorResponse(error, format: configuration.defaultFormat)))
        }
        // Typed inputs (Typed/): function calls and the functions document wait for the first function spec fetch.
        if let specs = functionSpecs, specs.firstFetchPending, route.usesFunctionSpec(request) {
            return .deferred { [self] in
                await specs.waitForFirstFetch()
                switch handleRoute(request, route) {
                case .respond(let response): return .response(response)
                case .deferred(let next): return await next()
                }
            }
        }
        return handleRoute(request, route)
    }

    private func handleRoute(_ request: GatewayRequest, _ route: Route) -> GatewayHandling {
        let template = route.template
        do throws(GatewayError) {
            let format = try requestFormat(request)
            switch route {
            case .health:
                try allow(request, ["GET", "HEAD"])
                return .respond(finish(request, template: template, .json(Array(#"{"status":"ok"}"#.utf8))))
            case .ready:
                try allow(request, ["GET", "HEAD"])
                return .deferred { [self] in .response(finish(request, template: template, await readiness())) }
            case .metrics:
                try allow(request, ["GET", "HEAD"])
                let body = metrics.render()
                return .respond(finish(request, template: template,
                    GatewayResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: body)))
            case .openAPI:
                try allow(request, ["GET", "HEAD"])
                if Self.wantsFunctionsDocument(request) {  // Typed/FunctionOpenAPI.swift
                    return .respond(finish(request, template: template, try functionsDocument(format)))
                }
                guard let document = openAPIDocument else {
                    throw GatewayError(status: 404, code: .routeNotFound, message: "The OpenAPI document is not available on this gateway")
                }
                return .respond(finish(request, template: template,
                    GatewayResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: document)))
            case .query(let function):
                try allow(request, ["GET", "HEAD", "POST"])
                let identity = try callerIdentity(request)
                if request.method == "POST" {
                    let args = try typed(function, try postArguments(request))
                    return .deferred { [self] in
                        .response(finish(request, template: template, await queryResponse(function, args, identity, format)))
                    }
                }
                let specGeneration = functionSpecs?.generation ?? 0
                let args = try typed(function, try RequestArguments.fromQuery(request.query))
                if wantsEventStream(request) {
                    return .deferred { [self] in await startStream(request, template, function, args, identity, format) }
                }
                return hotOrColdQuery(request, template, function, args, identity, format, specGeneration: specGeneration)
            case .subscribe(let function):
                try allow(request, ["GET"])
                let identity = try callerIdentity(request)
                let args = try typed(function, try RequestArguments.fromQuery(request.query))
                return .deferred { [self] in await startStream(request, template, function, args, identity, format) }
            case .mutation(let function), .action(let function):
                try allow(request, ["POST"])
                let identity = try callerIdentity(request)
                let args = try typed(function, try postArguments(request))
                let isMutation: Bool = if case .mutation = route { true } else { false }
                return .deferred { [self] in
                    .response(finish(request, template: template,
                        await callResponse(isMutation: isMutation, function, args, identity, format)))
                }
            }
        } catch {
            return .respond(finish(request, template: template, errorResponse(error, format: configuration.defaultFormat)))
        }
    }

    /// Records metrics for a finished request and passes the response through.
    func finish(_ request: GatewayRequest, template: String, _ response: GatewayResponse) -> GatewayResponse {
        var response = response
        response.headers += access.responseHeaders(for: request)  // CORS (Access/)
        metrics.recordRequest(route: template, status: response.status, duration: .now - request.startedAt)
        if response.status >= 500 {
            logger.debug("request failed", metadata: ["http.route": "\(template)", "http.status": "\(response.status)"])
        }
        return response
    }

    func errorResponse(_ error: GatewayError, format: OutputFormat) -> GatewayResponse {
        GatewayResponse(
            status: error.status, headers: [("Content-Type", "application/json")] + error.headers,
            body: error.body { render($0, format) })
    }

    private func allow(_ request: GatewayRequest, _ methods: [String]) throws(GatewayError) {
        guard methods.contains(request.method) else {
            throw GatewayError.methodNotAllowed(request.method, allowed: methods)
        }
    }

    private func requestFormat(_ request: GatewayRequest) throws(GatewayError) -> OutputFormat {
        let values = request.query.filter { $0.name == "format" }
        guard let last = values.last else { return configuration.defaultFormat }
        guard values.count == 1, let text = last.value else {
            throw GatewayError.badRequest("Give 'format' once, as format=plain, clean or encoded", code: .invalidFormat)
        }
        return try OutputFormat(parameter: text)
    }

    private func wantsEventStream(_ request: GatewayRequest) -> Bool {
        Self.acceptsEventStream(request.header("accept"))
    }

    /// Whether an `Accept` header asks for Server-Sent Events.
    static func acceptsEventStream(_ accept: String?) -> Bool {
        accept?.lowercased().contains("text/event-stream") == true
    }

    func callerIdentity(_ request: GatewayRequest) throws(GatewayError) -> UpstreamIdentity {
        guard let authorization = request.header("authorization") else { return .anonymous }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw GatewayError(
                status: 401, code: .unauthenticated,
                message: "Unsupported Authorization header; send 'Authorization: Bearer <JWT>'",
                headers: [("WWW-Authenticate", "Bearer")])
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw GatewayError(
                status: 401, code: .unauthenticated, message: "Malformed bearer token",
                headers: [("WWW-Authenticate", "Bearer")])
        }
        return .bearer(token)
    }

    /// Body arguments, after the content-type check: JSON, a missing type, `text/plain`, or curl's default form type
    /// (`curl -d '{…}'`) are read as JSON; any other declared type is refused with 415.
    func postArguments(_ request: GatewayRequest) throws(GatewayError) -> ConvexValue {
        if request.body.count > configuration.maxBodyBytes {
            throw GatewayError.payloadTooLarge(limit: configuration.maxBodyBytes)
        }
        if let contentType = request.header("content-type") {
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
            let accepted =
                mediaType == "application/json" || mediaType.hasSuffix("+json") || mediaType == "text/plain"
                || mediaType == "application/x-www-form-urlencoded" || mediaType.isEmpty
            guard accepted else { throw GatewayError.unsupportedMediaType(printable(contentType)) }
        }
        return try RequestArguments.fromBody(request.body)
    }

    // MARK: Upstream calls

    private func hotOrColdQuery(
        _ request: GatewayRequest, _ template: String, _ function: FunctionPath, _ args: ConvexValue,
        _ identity: UpstreamIdentity, _ format: OutputFormat, specGeneration: UInt64
    ) -> GatewayHandling {
        let (identityID, upstream) = pool.upstream(for: identity)
        let key = SubscriptionHub.Key(identity: identityID, function: function, args: args)
        if let hot = hub.currentBody(for: key, format: format) {
            if case .value = hot.snapshot.result {
                rememberHotTarget(
                    request, identity: identity, key: key, format: format, live: hot.live, specGeneration: specGeneration)
            }
            return .respond(finish(request, template: template, response(for: hot.snapshot, body: hot.body, format: format)))
        }
        return .deferred { [self] in
            guard await upstream.waitUntilConnected(timeout: configuration.connectTimeout) else {
                return .response(finish(request, template: template,
                    errorResponse(.upstreamUnavailable("not connected"), format: format)))
            }
            if let snapshot = await hub.firstResult(for: key, args: args, upstream: upstream, timeout: configuration.upstreamTimeout) {
                let body: [UInt8] = if case .value(let v) = snapshot.result { render(v, format) } else { [] }
                return .response(finish(request, template: template, response(for: snapshot, body: body, format: format)))
            }
            if hub.subscriptionCount >= configuration.maxSubscriptions {
                return .response(finish(request, template: template, await queryResponse(function, args, identity, format)))
            }
            return .response(finish(request, template: template,
                errorResponse(.upstreamTimeout(seconds: configuration.upstreamTimeout.seconds), format: format)))
        }
    }

    func response(for snapshot: SubscriptionHub.Snapshot, body: [UInt8], format: OutputFormat) -> GatewayResponse {
        switch snapshot.result {
        case .value:
            var response = GatewayResponse.json(body)
            response.headers.append(("ETag", "\"\(snapshot.id)\""))
            return response
        case .failure(let failure):
            return errorResponse(failure.gatewayError, format: format)
        }
    }

    private func queryResponse(
        _ function: FunctionPath, _ args: ConvexValue, _ identity: UpstreamIdentity, _ format: OutputFormat
    ) async -> GatewayResponse {
        await pool.withUpstream(for: identity) { _, upstream in
            await retryingWithFreshSpec(function, args) { args in  // Typed inputs (Typed/)
                await call(upstream, format: format) { upstream in try await upstream.query(function.description, args: args) }
            }
        }
    }

    private func callResponse(
        isMutation: Bool, _ function: FunctionPath, _ args: ConvexValue, _ identity: UpstreamIdentity,
        _ format: OutputFormat
    ) async -> GatewayResponse {
        await pool.withUpstream(for: identity) { _, upstream in
            await retryingWithFreshSpec(function, args) { args in  // Typed inputs (Typed/)
                await call(upstream, format: format) { upstream in
                    isMutation
                        ? try await upstream.mutation(function.description, args: args)
                        : try await upstream.action(function.description, args: args)
                }
            }
        }
    }

    /// Runs one upstream call with the connect and answer timeouts, mapping every failure to its response.
    private func call(
        _ upstream: any ConvexUpstream, format: OutputFormat,
        _ body: @escaping @Sendable (any ConvexUpstream) async throws -> ConvexValue
    ) async -> GatewayResponse {
        guard await upstream.waitUntilConnected(timeout: configuration.connectTimeout) else {
            return errorResponse(.upstreamUnavailable("not connected"), format: format)
        }
        let timeout = configuration.upstreamTimeout
        let result: Result<ConvexValue, UpstreamFailure> = await withTaskGroup(of: Result<ConvexValue, UpstreamFailure>?.self) { group in
            group.addTask {
                do {
                    return .success(try await body(upstream))
                } catch let failure as UpstreamFailure {
                    return .failure(failure)
                } catch {
                    return .failure(.functionFailed(message: "\(error)"))
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled ? nil : .failure(.timeout(seconds: timeout.seconds))
            }
            var outcome: Result<ConvexValue, UpstreamFailure> = .failure(.timeout(seconds: timeout.seconds))
            for await next in group {
                if let next {
                    outcome = next
                    break
                }
            }
            group.cancelAll()
            return outcome
        }
        switch result {
        case .success(let value): return .json(render(value, format))
        case .failure(let failure): return errorResponse(failure.gatewayError, format: format)
        }
    }

    private func readiness() async -> GatewayResponse {
        let (_, upstream) = pool.upstream(for: .anonymous)
        if await upstream.waitUntilConnected(timeout: .seconds(1)) {
            return .json(Array(#"{"status":"ready"}"#.utf8))
        }
        return errorResponse(.upstreamUnavailable("not connected"), format: configuration.defaultFormat)
    }

    // MARK: Streams

    private func startStream(
        _ request: GatewayRequest, _ template: String, _ function: FunctionPath, _ args: ConvexValue,
        _ identity: UpstreamIdentity, _ format: OutputFormat
    ) async -> GatewayOutcome {
        let (identityID, upstream) = pool.upstream(for: identity)
        let key = SubscriptionHub.Key(identity: identityID, function: function, args: args)
        guard await upstream.waitUntilConnected(timeout: configuration.connectTimeout) else {
            return .response(finish(request, template: template, errorResponse(.upstreamUnavailable("not connected"), format: format)))
        }
        // Wait for the first result so that an unknown function or bad arguments get a plain HTTP error, which makes
        // an EventSource stop instead of reconnecting forever.
        guard let first = await hub.firstResult(for: key, args: args, upstream: upstream, timeout: configuration.upstreamTimeout) else {
            if hub.subscriptionCount >= configuration.maxSubscriptions {
                return .response(finish(request, template: template, errorResponse(.overloaded, format: format)))
            }
            return .response(finish(request, template: template,
                errorResponse(.upstreamTimeout(seconds: configuration.upstreamTimeout.seconds), format: format)))
        }
        if case .failure(let failure) = first.result, [400, 401, 404].contains(failure.gatewayError.status) {
            return .response(finish(request, template: template, errorResponse(failure.gatewayError, format: format)))
        }
        _ = finish(request, template: template, GatewayResponse(status: 200, body: []))
        let lastEventID = request.header("last-event-id")
        let hub = self.hub
        let logger = self.logger
        return .stream(EventStreamStart(
            headers: [
                ("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
            ] + access.responseHeaders(for: request),
            preamble: Array("retry: 3000\n: connected\n\n".utf8),
            format: format,
            attach: { sink in
                do {
                    try hub.attach(sink, to: key, args: args, upstream: upstream, lastEventID: lastEventID)
                } catch {
                    logger.debug("stream refused", metadata: ["error": "\(error)"])
                    sink.finish()
                }
            },
            detach: { sink in hub.detach(sink, from: key) }
        ))
    }

    /// Sends the heartbeat comment to every open stream.
    public func sendHeartbeats() {
        let beat = ServerSentEvent.comment("hb")
        for sink in hub.allSinks() {
            sink.deliver(beat, coalesce: false)
        }
    }
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}
