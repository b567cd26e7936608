import MicroHTTPD
import Synchronization

/// The hot `GET /query` path: once a `GET` has been answered from a live subscription, its request target (path
/// and query exactly as sent) is remembered with the subscription it resolved to, and later `GET`s of the same target
/// are answered with one prepared libmicrohttpd response per value — no routing, argument parsing, rendering or
/// copying per request.
///
/// It gives the same answer full handling would give. It asks the same access stage (CORS, API key, rate limit) as
/// full handling does, and applies only where the rest of the answer depends on the target alone: `GET` without
/// `Authorization` or the auth cookie (anonymous), without `Accept: text/event-stream`, and with the function spec unchanged since the
/// target was remembered. Anything else, and any target not remembered, takes full handling.
final class HotQueries: Sendable {
    /// What a remembered target resolved to.
    final class Route: Sendable {
        let key: SubscriptionHub.Key
        let format: OutputFormat
        let live: LiveResult
        /// The function spec's generation the arguments were coerced with.
        let specGeneration: UInt64
        /// The prepared answers of one subscription revision, by the access stage's headers (CORS headers differ per
        /// allowed origin when origins are echoed).
        let prepared = Mutex<(revision: UInt64, byHeaders: [String: HTTPPreparedResponse])?>(nil)

        /// Distinct header sets prepared per revision at most; past that, answers are built per request.
        static let headerVariants = 32

        init(key: SubscriptionHub.Key, format: OutputFormat, live: LiveResult, specGeneration: UInt64) {
            self.key = key
            self.format = format
            self.live = live
            self.specGeneration = specGeneration
        }
    }

    /// Targets remembered at most; when full, forgotten subscriptions are dropped, and if that frees nothing, all
    /// targets are (they are learnt again by their next request), so distinct targets cannot grow memory.
    static let capacity = 4096

    private let routes = Mutex<[String: Route]>([:])
    /// Answers on the hot path are counted like any other `GET /query` answer.
    let recorder: GatewayMetrics.RequestRecorder

    init(metrics: GatewayMetrics) {
        recorder = metrics.requestRecorder(route: ConvexGateway.Route.queryTemplate, status: 200)
    }

    var count: Int { routes.withLock { $0.count } }

    func route(for target: String) -> Route? {
        routes.withLock { $0[target] }
    }

    func remember(_ route: Route, for target: String) {
        routes.withLock { routes in
            if routes.count >= Self.capacity && routes[target] == nil {
                routes = routes.filter { $0.value.live.revision != nil }
                if routes.count >= Self.capacity { routes = [:] }
            }
            routes[target] = route
        }
    }

    func forget(_ route: Route, for target: String) {
        routes.withLock { routes in
            if routes[target] === route { routes[target] = nil }
        }
    }
}

extension GatewayCore {
    /// The hot path (see ``HotQueries``): the prepared answer to a `GET` of a remembered target whose subscription
    /// has a current value, or `nil` for full handling.
    package func hotAnswer(_ request: HTTPRequestHead) -> HTTPPreparedResponse? {
        let started = ContinuousClock.now
        guard request.method == "GET", let target = request.target, let route = hotQueries.route(for: target)
        else { return nil }
        // The parse stage's conditions for an answer that depends on the target alone: no credentials.
        guard !request.hasHeader("Authorization"), !ParsedRequest.acceptsEventStream(request.header("Accept"))
        else { return nil }
        if let cookie = credentials.cookieName, CookieHeader.value(named: cookie, in: request.header("Cookie")) != nil {
            return nil
        }
        guard route.specGeneration == (functionSpecs?.generation ?? 0), let revision = route.live.revision else {
            hotQueries.forget(route, for: target)
            return nil
        }
        // Asked last, after every check that can decline, so the rate limit counts the request once.
        let path = target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
        let accessHeaders: [(String, String)]
        switch access.decide(
            method: request.method, path: path, remoteAddress: request.remoteAddress, header: request.header)
        {
        case .answer(let refusal):
            let context = ResponseContext(template: Route.queryTemplate, startedAt: started, headers: [])
            return try? HTTPPreparedResponse(HTTPResponse(finish(refusal, context)))
        case .proceed(let headers):
            accessHeaders = headers
        }
        route.live.touch(at: clock.now)
        let variant = accessHeaders.map { "\($0.0): \($0.1)" }.joined(separator: "\n")
        let prepared: HTTPPreparedResponse
        if let held = route.prepared.withLock({ $0 }), held.revision == revision, let response = held.byHeaders[variant]
        {
            prepared = response
        } else {
            // Rendered after the revision was read, so it is at least as new as that revision.
            guard let current = hub.currentBody(for: route.key, format: route.format),
                case .value = current.snapshot.result
            else { return nil }
            var response = self.response(for: current.snapshot, body: current.body, format: route.format)
            response.headers += accessHeaders
            guard let made = try? HTTPPreparedResponse(HTTPResponse(response)) else { return nil }
            route.prepared.withLock { held in
                if held == nil || held!.revision < revision { held = (revision, [:]) }
                if held!.revision == revision && held!.byHeaders.count < HotQueries.Route.headerVariants {
                    held!.byHeaders[variant] = made
                }
            }
            prepared = made
        }
        hotQueries.recorder.record(.now - started)
        return prepared
    }

    /// Called by full handling when it answered a `GET` from a live subscription: remembers the target when the
    /// answer depends on the target alone (an anonymous caller).
    func rememberHotTarget(_ request: ParsedRequest, key: SubscriptionHub.Key, live: LiveResult, specGeneration: UInt64)
    {
        guard request.method == "GET", request.identity == .anonymous else { return }
        let target = request.request.target
        // Requests the hot path declines come through here every time: keep what is remembered, with its prepared
        // responses, while it still holds.
        if let known = hotQueries.route(for: target), known.live === live, known.specGeneration == specGeneration {
            return
        }
        hotQueries.remember(
            HotQueries.Route(key: key, format: request.format, live: live, specGeneration: specGeneration),
            for: target)
    }
}
