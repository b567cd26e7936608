import ConvexSyncProtocol
import ConvexValues
import HTTPFields
import MicroHTTPD
import Synchronization

/// The hot path, a stage of its own: once a `GET /query/<function>` has been answered from a live subscription, its
/// request target (path and query exactly as sent) is remembered with the subscription it resolved to (``Targets``),
/// and later `GET`s of the same target are answered on libmicrohttpd's thread, from the request head, with one
/// prepared response per value — no routing, argument parsing, rendering or copying per request. MicroHTTPD calls
/// ``answer(_:)`` first (`HTTPServerConfiguration.hotPath`); `nil` hands the request to full handling.
///
/// It gives the same answer full handling would give. It asks the same access stage (CORS, API key, rate limit) as
/// full handling does, and applies only where the rest of the answer depends on the target alone
/// (``answersByTargetAlone(method:fields:authCookie:)``), with the function spec unchanged since the target was
/// remembered. Anything else, and any target not remembered, takes full handling.
///
/// `If-None-Match` and `Accept-Encoding` are answered by the same rules as full handling (ConditionalGetAndGzip/):
/// a 304, or gzip from 1 KiB, with the compressed body made once per value. A long-poll (`Prefer: wait`) takes full
/// handling, which can wait.
struct HotPath: Sendable {
    let targets: Targets
    let access: AccessControl
    let hub: SubscriptionHub
    /// Makes a value's answer as full handling does.
    let queries: Queries
    let readYourWrites: ReadYourWrites
    let functionSpecs: FunctionSpecStore?
    let maxWaitSeconds: Int
    let metrics: GatewayMetrics
    let clock: GatewayClock
    let accessLog: AccessLog
    let tracing: RequestTracing

    /// The prepared answer to a `GET` of a remembered target whose subscription has a current value, or `nil` for
    /// full handling.
    func answer(_ request: HTTPRequestHead) -> HTTPPreparedResponse? {
        // One clock for the answer's duration and the subscription's last read: two readings per answer.
        let started = clock.now
        guard let found = lookUp(request) else { return nil }
        // Asked last, after every check that can decline, so the rate limit counts the request once.
        let accessHeaders: [(String, String)]
        switch access.decide(
            method: request.method, accessClass: .functionCall,  // a remembered target is a `GET /query/<function>`
            remoteAddress: request.remoteAddress, fields: request)
        {
        case .answer(let refusal):
            return refused(refusal, request, found.route, started: started)
        case .proceed(let headers):
            accessHeaders = headers
        }
        found.route.live.touch(at: started)
        guard let value = currentValue(found) else { return nil }
        let notModified =
            found.sentIfNoneMatch
            && request.withField(HeaderName.ifNoneMatch) { field in
                field.map { EntityTag.ifNoneMatch($0, matches: value.etag, gzip: value.gzipETag) } ?? false
            }
        guard let prepared = variant(of: value, request, notModified: notModified, accessHeaders: accessHeaders)
        else { return nil }
        recordAnswer(request, found.route, notModified: notModified, bytes: prepared.bodyCount, started: started)
        return prepared
    }

    /// A remembered target the hot path may answer, with what its checks read.
    struct Found {
        let route: Targets.Remembered
        let version: ResultVersion
        /// The oldest snapshot the answer may come from (read-your-writes).
        let floor: ConvexTimestamp
        let sentIfNoneMatch: Bool
    }

    /// The remembered target of a `GET` whose answer depends on its target alone, with a current value at the
    /// read-your-writes floor, or `nil` for full handling (which also answers a long-poll and a malformed header).
    private func lookUp(_ request: HTTPRequestHead) -> Found? {
        guard request.method == "GET", let target = request.target,
            let route = targets.route(for: target, on: request)
        else { return nil }
        // The answer must depend on the target alone, as full handling decides when it remembers a target.
        guard Self.answersByTargetAlone(method: request.method, fields: request, authCookie: targets.authCookie)
        else { return nil }
        guard route.specFetchCount == (functionSpecs?.fetchCount ?? 0), let version = route.live.version else {
            targets.forget(route, for: target)
            return nil
        }
        // Read-your-writes (ReadYourWrites/SnapshotFloor.swift): the answer's snapshot must be at the newest commit
        // answered here and the caller's `Convex-Min-Timestamp` or later; while the subscription's connection is
        // behind, full handling moves it there. (A malformed header gets full handling's 400.)
        let minTimestamp: ConvexTimestamp?
        do {
            minTimestamp = try SnapshotFloor.minTimestamp(request.header(HeaderName.convexMinTimestamp))
        } catch {
            return nil
        }
        let floor = readYourWrites.floor(minTimestamp: minTimestamp)
        guard route.live.session.ts >= floor else { return nil }
        // The representation fields are read in place (HTTPRequestHead): nothing is copied for the usual answer.
        let sentIfNoneMatch = request.hasHeader(HeaderName.ifNoneMatch)
        if sentIfNoneMatch,
            Prefer.longPollWait(request.header(HeaderName.prefer), maxSeconds: maxWaitSeconds) != nil
        {
            return nil
        }
        return Found(route: route, version: version, floor: floor, sentIfNoneMatch: sentIfNoneMatch)
    }

    /// The access stage's refusal, completed (metrics, access log, trace) as full handling completes it.
    private func refused(
        _ refusal: GatewayResponse, _ request: HTTPRequestHead, _ route: Targets.Remembered, started: Duration
    ) -> HTTPPreparedResponse? {
        let context = ResponseContext(
            template: Route.queryTemplate, startedAt: started, headers: [],
            representation: RepresentationPreferences(method: "GET", header: request.header),
            function: tracing.isOn ? try? UdfPath(parsing: route.key.function) : nil, signedIn: false,
            trace: tracing.start(request.header))
        return try? HTTPPreparedResponse(
            HTTPResponse(
                GatewayCore.completed(
                    refusal, context, metrics: metrics, clock: clock, accessLog: accessLog, tracing: tracing)))
    }

    /// The target's value as an answer: the one prepared for its version, else rendered now and kept, or `nil` when
    /// the subscription has no value at the floor.
    private func currentValue(_ found: Found) -> Targets.CachedResponse? {
        let (route, version, floor) = (found.route, found.version, found.floor)
        if let held = route.prepared.withLock({ $0 }), held.version == version, held.ts >= floor { return held }
        // Rendered after the version was read, so it is at least as new as that version.
        guard let rendered = hub.currentBody(for: route.key, format: route.format),
            case .value = rendered.current.result, rendered.ts >= floor
        else { return nil }
        let value = Targets.CachedResponse(
            version: version, ts: rendered.ts,
            response: queries.answer(for: rendered.current, body: rendered.body, format: route.format, ts: rendered.ts))
        route.prepared.withLock { held in
            if held == nil || held!.version < version || (held!.version == version && held!.ts < rendered.ts) {
                held = value
            }
        }
        return value
    }

    /// The libmicrohttpd response for the request's variant of a value (coding, 304 or 200, access headers): prepared
    /// once per variant, then reused.
    private func variant(
        of value: Targets.CachedResponse, _ request: HTTPRequestHead, notModified: Bool,
        accessHeaders: [(String, String)]
    ) -> HTTPPreparedResponse? {
        let gzip = request.withField(HeaderName.acceptEncoding, AcceptEncoding.acceptsGzip)
        if let made = value.variant(gzip: gzip, notModified: notModified, accessHeaders: accessHeaders) {
            return made
        }
        let representation = RepresentationPreferences(method: "GET", header: request.header)
        var response = value.response.negotiated(representation) { value.gzipped }
        response.headers += accessHeaders
        // Last, as full handling adds an anonymous caller's (Finish.swift); kept with the prepared variant.
        response.headers += targets.anonymousCallerHeaders
        guard let made = try? HTTPPreparedResponse(HTTPResponse(response)) else { return nil }
        value.keep(.init(gzip: gzip, notModified: notModified, accessHeaders: accessHeaders, prepared: made))
        return made
    }

    /// Counts the answer as any `GET /query` answer, and logs and traces it when tracing is on.
    private func recordAnswer(
        _ request: HTTPRequestHead, _ route: Targets.Remembered, notModified: Bool, bytes: Int,
        started: Duration
    ) {
        let duration = clock.now - started
        (notModified ? targets.notModifiedRecorder : targets.recorder).record(duration)
        guard tracing.isOn else { return }
        let trace = tracing.start(request.header)
        let status = notModified ? 304 : 200
        if accessLog.isOn {
            accessLog.answered(
                method: "GET", route: Route.queryTemplate, function: route.key.function, status: status,
                bytes: bytes, duration: duration, signedIn: false, requestID: accessLog.requestID(), trace: trace)
        }
        tracing.answered(
            trace, method: "GET", route: Route.queryTemplate, status: status, function: route.key.function,
            duration: duration, upstream: nil)
    }

    /// Whether the answer to a request depends on its target (path and query) alone, asked by both paths: the hot path
    /// answers only such requests, and full handling remembers targets only for them, so the two cannot drift.
    ///
    /// It does when the request is a `GET` that names no caller (no `Authorization`, no auth cookie: the call is
    /// anonymous) and does not ask for an event stream. The representation fields (`If-None-Match`,
    /// `Accept-Encoding`) and the access stage's headers vary the answer in ways both paths apply by the same rules
    /// (ConditionalGetAndGzip/, Access/); a long-poll (`Prefer: wait`) is left to full handling, which can wait.
    static func answersByTargetAlone(method: String, fields: some HeaderFields, authCookie: String?) -> Bool {
        guard method == "GET", fields.withField(HeaderName.authorization, { $0 == nil }),
            !fields.withField(HeaderName.accept, Accept.acceptsEventStream)
        else { return false }
        guard let authCookie else { return true }
        return fields.withField(HeaderName.cookie) { field in
            field.map { CookieHeader.value(named: authCookie, in: $0.text) == nil } ?? true
        }
    }
}

extension HotPath {
    /// The remembered targets, each with the prepared answers of its current value. Full handling (``Queries``)
    /// remembers them; the hot path answers from them.
    final class Targets: Sendable {
        /// What a remembered target resolved to.
        final class Remembered: Sendable {
            let key: SubscriptionHub.Key
            let format: OutputFormat
            let live: LiveResult
            /// How many times the function specs had been fetched when the arguments were coerced with them.
            let specFetchCount: UInt64
            /// The answers prepared for the current value (one version of the subscription's result).
            let prepared = POSIXLocked<CachedResponse?>(nil)

            init(key: SubscriptionHub.Key, format: OutputFormat, live: LiveResult, specFetchCount: UInt64) {
                self.key = key
                self.format = format
                self.live = live
                self.specFetchCount = specFetchCount
            }
        }

        /// One value of a remembered target and the answers prepared for it: its 200 before negotiation, the gzip-coded
        /// body (made once, on first use), and one libmicrohttpd response per variant (coding, 304 or 200, the access
        /// stage's headers: CORS headers differ per allowed origin when origins are echoed).
        final class CachedResponse: Sendable {
            let version: ResultVersion
            /// The snapshot the value holds at, in its `Convex-Timestamp` (the value may hold at later ones too).
            let ts: ConvexTimestamp
            let response: GatewayResponse
            let etag: String
            let gzipETag: String
            private let gzip = POSIXLocked<[UInt8]??>(nil)
            /// Few per value (one per client kind and origin), so a list compared in place: no key is built per request.
            let variants = POSIXLocked<[Variant]>([])

            struct Variant {
                var gzip: Bool
                var notModified: Bool
                var accessHeaders: [(String, String)]
                var prepared: HTTPPreparedResponse

                func matches(gzip: Bool, notModified: Bool, accessHeaders: [(String, String)]) -> Bool {
                    guard self.gzip == gzip, self.notModified == notModified,
                        self.accessHeaders.count == accessHeaders.count
                    else { return false }
                    // The access stage hands out the same prepared strings each time, so each comparison is short.
                    for index in accessHeaders.indices where self.accessHeaders[index] != accessHeaders[index] {
                        return false
                    }
                    return true
                }
            }

            /// Variants prepared per value at most; past that, answers are built per request.
            static let maxVariants = 64

            init(version: ResultVersion, ts: ConvexTimestamp, response: GatewayResponse) {
                self.version = version
                self.ts = ts
                self.response = response
                self.etag = response.header(HeaderName.eTag) ?? ""
                self.gzipETag = EntityTag.gzipVariant(of: etag)
            }

            /// The gzip-coded body, compressed by the first request that needs it (others wait for it rather than
            /// compress the same bytes again).
            var gzipped: [UInt8]? {
                gzip.withLock { held in
                    if let held { return held }
                    let coded = ContentCoding.gzip(response.body)
                    held = .some(coded)
                    return coded
                }
            }

            func variant(gzip: Bool, notModified: Bool, accessHeaders: [(String, String)]) -> HTTPPreparedResponse? {
                variants.withLock { variants in
                    variants.first { $0.matches(gzip: gzip, notModified: notModified, accessHeaders: accessHeaders) }?
                        .prepared
                }
            }

            func keep(_ variant: Variant) {
                variants.withLock { variants in
                    if variants.count < Self.maxVariants { variants.append(variant) }
                }
            }
        }

        /// Targets remembered at most; when full, forgotten subscriptions are dropped, and if that frees nothing, all
        /// targets are (they are learnt again by their next request), so distinct targets cannot grow memory.
        static let capacity = 4096

        /// The hot path's state is behind POSIX mutexes (``POSIXLocked``), not `Mutex`: libmicrohttpd's worker threads
        /// read the objects it holds (a remembered route, a prepared value) outside the lock, made on other threads,
        /// and ThreadSanitizer sees that hand-over only through a lock it intercepts.
        private let routes = POSIXLocked<[String: Remembered]>([:])
        /// Moves on whenever a target is remembered or forgotten, so a connection's memo of its last lookup
        /// (``ConnectionRouteCache``) is trusted only while nothing changed.
        private let changeCount = Atomic<UInt64>(0)

        /// What a keep-alive connection's previous hot request looked up (kept with the connection by MicroHTTPD): the next
        /// request for the same target then needs no dictionary lookup (no hashing of the target).
        final class ConnectionRouteCache {
            let target: String
            let route: Remembered
            let changeCount: UInt64

            init(target: String, route: Remembered, changeCount: UInt64) {
                self.target = target
                self.route = route
                self.changeCount = changeCount
            }
        }

        /// Answers on the hot path are counted like any other `GET /query` answer (200, or 304 to `If-None-Match`).
        let recorder: GatewayMetrics.RequestRecorder
        let notModifiedRecorder: GatewayMetrics.RequestRecorder
        /// `--auth-cookie`: a request that carries it answers for its caller, so its target is never remembered or
        /// answered here (``HotPath/answersByTargetAlone(method:fields:authCookie:)``).
        let authCookie: String?
        /// The headers of an anonymous caller's answer (``CallerCaching``): every answer here is one.
        let anonymousCallerHeaders: [(String, String)]

        init(metrics: GatewayMetrics, authCookie: String?) {
            self.authCookie = authCookie
            anonymousCallerHeaders = CallerCaching(authCookie: authCookie).anonymous
            recorder = metrics.requestRecorder(route: Route.queryTemplate, status: 200)
            notModifiedRecorder = metrics.requestRecorder(route: Route.queryTemplate, status: 304)
        }

        var count: Int { routes.withLock { $0.count } }

        func route(for target: String) -> Remembered? {
            routes.withLock { $0[target] }
        }

        /// The route for `target`, from the connection's memo when it still holds, else from the remembered targets
        /// (and then kept as the connection's memo).
        func route(for target: String, on request: HTTPRequestHead) -> Remembered? {
            let count = changeCount.load(ordering: .acquiring)
            if let memo = request.connectionMemo as? ConnectionRouteCache, memo.changeCount == count,
                memo.target == target
            {
                return memo.route
            }
            guard let route = route(for: target) else { return nil }
            request.connectionMemo = ConnectionRouteCache(target: target, route: route, changeCount: count)
            return route
        }

        func remember(_ route: Remembered, for target: String) {
            routes.withLock { routes in
                if routes.count >= Self.capacity && routes[target] == nil {
                    routes = routes.filter { $0.value.live.version != nil }
                    if routes.count >= Self.capacity { routes = [:] }
                }
                routes[target] = route
                changeCount.add(1, ordering: .releasing)
            }
        }

        func forget(_ route: Remembered, for target: String) {
            routes.withLock { routes in
                if routes[target] === route {
                    routes[target] = nil
                    changeCount.add(1, ordering: .releasing)
                }
            }
        }

        /// Called by full handling when it answered a `GET` from a live subscription: remembers the target when the
        /// answer depends on the target alone (an anonymous caller).
        func remember(
            _ request: ParsedRequest, key: SubscriptionHub.Key, live: LiveResult, specFetchCount: UInt64
        ) {
            guard HotPath.answersByTargetAlone(method: request.method, fields: request.request, authCookie: authCookie)
            else {
                return
            }
            let target = request.request.target
            // Requests the hot path declines come through here every time: keep what is remembered, with its prepared
            // responses, while it still holds.
            if let known = route(for: target), known.live === live, known.specFetchCount == specFetchCount {
                return
            }
            remember(
                Remembered(key: key, format: request.format, live: live, specFetchCount: specFetchCount),
                for: target)
        }
    }
}
