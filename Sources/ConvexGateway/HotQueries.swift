import MicroHTTPD
import Synchronization

/// The hot `GET /query` path: once a `GET` has been answered from a live subscription, its request target (path
/// and query exactly as sent) is remembered with the subscription it resolved to, and later `GET`s of the same target
/// are answered with one prepared libmicrohttpd response per value — no routing, argument parsing, rendering or
/// copying per request.
///
/// It gives the same answer full handling would give. It applies only where the answer depends on the target alone:
/// `GET` without `Authorization` (anonymous), without `Accept: text/event-stream`, without an `Origin` when CORS is on,
/// with the API key when one is required, with no rate limit configured, and with the function spec unchanged since
/// the target was remembered. Anything else, and any target not remembered, takes full handling.
final class HotQueries: Sendable {
    /// What a remembered target resolved to.
    final class Route: Sendable {
        let key: SubscriptionHub.Key
        let format: OutputFormat
        let live: LiveResult
        /// The function spec's generation the arguments were coerced with.
        let specGeneration: UInt64
        /// The prepared answer and the subscription revision it holds.
        let prepared = Mutex<(revision: UInt64, response: HTTPPreparedResponse)?>(nil)

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
        recorder = metrics.requestRecorder(route: GatewayCore.Route.queryTemplate, status: 200)
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
    public func hotAnswer(_ request: HTTPRequestHead) -> HTTPPreparedResponse? {
        let started = ContinuousClock.now
        guard request.method == "GET", let target = request.target, let route = hotQueries.route(for: target)
        else { return nil }
        guard hotPathApplies(to: request) else { return nil }
        guard route.specGeneration == (functionSpecs?.generation ?? 0), let revision = route.live.revision else {
            hotQueries.forget(route, for: target)
            return nil
        }
        route.live.touch(at: started)
        let prepared: HTTPPreparedResponse
        if let held = route.prepared.withLock({ $0 }), held.revision == revision {
            prepared = held.response
        } else {
            // Rendered after the revision was read, so it is at least as new as that revision.
            guard let current = hub.currentBody(for: route.key, format: route.format),
                case .value = current.snapshot.result,
                let made = try? HTTPPreparedResponse(
                    HTTPResponse(response(for: current.snapshot, body: current.body, format: route.format)))
            else { return nil }
            route.prepared.withLock { $0 = (revision, made) }
            prepared = made
        }
        hotQueries.recorder.record(.now - started)
        return prepared
    }

    /// Called by full handling when it answered a `GET` from a live subscription: remembers the target when its
    /// answer depends on the target alone.
    func rememberHotTarget(
        _ request: GatewayRequest, identity: UpstreamIdentity, key: SubscriptionHub.Key, format: OutputFormat,
        live: LiveResult, specGeneration: UInt64
    ) {
        guard request.method == "GET", identity == .anonymous, !access.screensEveryRequest else { return }
        let target = request.target
        // Requests the hot path declines (an Origin with CORS on, say) come through here every time: keep what is
        // remembered, with its prepared response, while it still holds.
        if let known = hotQueries.route(for: target), known.live === live, known.specGeneration == specGeneration {
            return
        }
        hotQueries.remember(
            HotQueries.Route(key: key, format: format, live: live, specGeneration: specGeneration), for: target)
    }

    /// Whether the headers leave the answer to depend on the target alone: an anonymous caller, no event stream, and
    /// access controls that pass without a trace (the rest of the conditions are checked by the caller).
    private func hotPathApplies(to request: HTTPRequestHead) -> Bool {
        !request.hasHeader("Authorization") && !Self.acceptsEventStream(request.header("Accept"))
            && access.passesUnchanged(header: request.header)
    }
}
