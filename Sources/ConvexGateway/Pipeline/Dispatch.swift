import ConvexSyncProtocol
import ConvexValues

/// The dispatch stage: a parsed request becomes a query, mutation or action call, an event stream, a hot answer
/// from a live subscription, or one of the gateway's own routes.
extension GatewayCore {
    func dispatch(_ request: ParsedRequest, _ context: ResponseContext) -> GatewayHandling {
        do throws(GatewayError) {
            switch request.route {
            case .health:
                return .respond(finish(.json(Array(#"{"status":"ok"}"#.utf8)), context))
            case .ready:
                return .deferred { [self] in .response(finish(await readiness(), context)) }
            case .metrics:
                let body = metrics.render()
                return .respond(
                    finish(
                        GatewayResponse(
                            status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                            body: body), context))
            case .openAPI:
                if request.wantsFunctionsDocument {  // Typed/FunctionOpenAPI.swift
                    return .respond(finish(try functionsDocument(request.format), context))
                }
                guard let document = openAPIDocument else {
                    throw GatewayError(
                        status: 404, code: .routeNotFound,
                        message: "The OpenAPI document is not available on this gateway")
                }
                return .respond(
                    finish(
                        GatewayResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: document),
                        context))
            case .clientScript:
                return .respond(finish(ClientScript.response, context))
            case .query(let function) where request.method == "POST":
                let input = try bodyInput(request)
                let args = try arguments(input, for: function)
                return .deferred { [self] in
                    .response(finish(await callResponse(.query, function, input, args, request), context))
                }
            case .query(let function):
                let specGeneration = functionSpecs?.generation ?? 0
                let input = ArgumentStage.Input.query(request.query)
                let args = try arguments(input, for: function)
                if request.wantsEventStream {
                    let subscription = StreamSubscription(id: nil, function: function, args: args)
                    return try admitStream { [self] in await startStream(request, context, [subscription]) }
                }
                return hotOrColdQuery(request, context, function, input, args, specGeneration: specGeneration)
            case .subscribe(let function):
                let args = try arguments(.query(request.query), for: function)
                let subscription = StreamSubscription(id: nil, function: function, args: args)
                return try admitStream { [self] in await startStream(request, context, [subscription]) }
            case .queryMany:
                return try batchQuery(request, context)
            case .subscribeMany:
                let subscriptions = try streamSubscriptions(request)
                return try admitStream { [self] in await startStream(request, context, subscriptions) }
            case .streamTickets:
                return .respond(finish(try streamTicket(for: request), context))
            case .mutation(let function), .action(let function):
                let kind: CallKind = if case .mutation = request.route { .mutation } else { .action }
                let input = try bodyInput(request)
                let args = try arguments(input, for: function)
                return .deferred { [self] in
                    .response(finish(await callResponse(kind, function, input, args, request), context))
                }
            }
        } catch {
            return .respond(finish(errorResponse(error, format: request.format), context))
        }
    }

    private func bodyInput(_ request: ParsedRequest) throws(GatewayError) -> ArgumentStage.Input {
        try ArgumentStage.input(
            fromBody: request.request.body, contentType: request.request.header("content-type"),
            maxBytes: configuration.maxBodyBytes)
    }

    /// The typed-arguments stage with the current function spec.
    func arguments(_ input: ArgumentStage.Input, for function: UdfPath) throws(GatewayError) -> ConvexValue {
        try ArgumentStage.arguments(input, for: function, spec: functionSpecs?.current)
    }

    // MARK: Queries from live subscriptions

    private func hotOrColdQuery(
        _ request: ParsedRequest, _ context: ResponseContext, _ function: UdfPath, _ input: ArgumentStage.Input,
        _ args: ConvexValue, specGeneration: UInt64
    ) -> GatewayHandling {
        let format = request.format
        let (identityID, upstream) = pool.upstream(for: request.identity)
        let key = SubscriptionHub.Key(identity: identityID, function: function, args: args)
        let longPoll = longPollWait(request, context)
        let floor = snapshotFloor(request)
        // A live result answers at once when its snapshot is new enough (read-your-writes, SnapshotFloor.swift).
        if let hot = hub.currentBody(for: key, format: format), hot.ts >= floor {
            let answer = response(for: hot.current, body: hot.body, format: format, ts: hot.ts)
            if case .value = hot.current.result {
                rememberHotTarget(request, key: key, live: hot.live, specGeneration: specGeneration)
                if let longPoll, Self.holds(context, answer) {
                    return .deferred { [self] in
                        await .response(
                            waitForChange(answer, hot.current, key, args, upstream, longPoll, format, context))
                    }
                }
            }
            return .respond(finish(answer, context))
        }
        return .deferred { [self] in
            if let refusal = await readyToRead(at: floor, identity: identityID, upstream: upstream, format: format) {
                return .response(finish(refusal, context))
            }
            if let (current, ts) = await hub.firstResult(
                for: key, args: args, upstream: upstream, timeout: configuration.upstreamTimeout)
            {
                let body: [UInt8] = if case .value(let v) = current.result { render(v, format) } else { [] }
                let answer = response(for: current, body: body, format: format, ts: ts)
                if let longPoll, Self.holds(context, answer) {
                    return await .response(
                        waitForChange(answer, current, key, args, upstream, longPoll, format, context))
                }
                return .response(finish(answer, context))
            }
            if hub.subscriptionCount >= configuration.maxSubscriptions {
                return .response(finish(await callResponse(.query, function, input, args, request), context))
            }
            return .response(
                finish(
                    errorResponse(.upstreamTimeout(seconds: configuration.upstreamTimeout.seconds), format: format),
                    context))
        }
    }

    /// The answer to a query from a live result that holds at snapshot `ts`: the value with its `ETag`, or the
    /// function's error; either with `Convex-Timestamp`.
    func response(
        for current: SubscriptionHub.CurrentResult, body: [UInt8], format: OutputFormat, ts: UInt64
    ) -> GatewayResponse {
        var response: GatewayResponse
        switch current.result {
        case .value:
            response = GatewayResponse.json(body)
            response.headers.append(("ETag", Self.etag(hash: current.hash, format: format)))
        case .failure(let failure):
            response = errorResponse(failure, format: format)
        }
        response.headers.append((SnapshotFloor.timestampHeader, String(ts)))
        return response
    }

    // MARK: Read-your-writes

    /// The oldest snapshot an answer to `request` may come from (Pipeline/SnapshotFloor.swift).
    func snapshotFloor(_ request: ParsedRequest) -> UInt64 {
        SnapshotFloor.required(
            minTimestamp: request.minTimestamp, lastCommit: lastCommit.ts, readYourWrites: configuration.readYourWrites)
    }

    /// Waits for the upstream connection, then makes the hub's results of `identity` hold at `floor` or later; the
    /// error to answer when either fails (503 unreachable, 504 when the deployment does not reach `floor` in time).
    func readyToRead(
        at floor: UInt64, identity: String, upstream: any ConvexUpstream, format: OutputFormat
    ) async -> GatewayResponse? {
        do throws(UpstreamFailure) {
            try await upstream.waitUntilConnected(timeout: configuration.connectTimeout)
        } catch {
            return errorResponse(error, format: format)
        }
        return await reachSnapshot(floor, identity: identity, upstream: upstream, format: format)
    }

    /// Makes the hub's results of `identity` hold at `floor` or later; the 504 to answer when the deployment does not
    /// get there within the upstream timeout.
    private func reachSnapshot(
        _ floor: UInt64, identity: String, upstream: any ConvexUpstream, format: OutputFormat
    ) async -> GatewayResponse? {
        guard floor > 0, hub.sessionTimestamp(of: identity) < floor else { return nil }
        let timeout = configuration.upstreamTimeout
        if await hub.reach(floor, identity: identity, upstream: upstream, timeout: timeout) { return nil }
        return errorResponse(.timestampNotReached(floor, seconds: timeout.seconds), format: format)
    }

    /// A value's entity tag: its hash and output mode, `"<16 hex digits>-<format>"`. It names the content, not the
    /// subscription, so it holds across re-subscriptions, gateway restarts and replicas; the gzip-coded body has
    /// `"…-<format>-gzip"` (EntityTag.swift).
    static func etag(hash: UInt64, format: OutputFormat) -> String {
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "-" + format.rawValue + "\""
    }

    // MARK: Long-poll

    /// The wait a `GET` asks for with `If-None-Match` and `Prefer: wait=<seconds>`, bounded by `--max-wait-seconds`;
    /// `nil` when it asks for none (or waiting is off).
    func longPollWait(_ request: ParsedRequest, _ context: ResponseContext) -> Int? {
        guard request.method == "GET", context.representation.ifNoneMatch != nil else { return nil }
        return Prefer.longPollWait(request.request.header("prefer"), maxSeconds: configuration.maxWaitSeconds)
    }

    /// Whether the request's `If-None-Match` names the value `answer` carries, i.e. the client holds it already.
    static func holds(_ context: ResponseContext, _ answer: GatewayResponse) -> Bool {
        guard let ifNoneMatch = context.representation.ifNoneMatch, let etag = answer.header("ETag") else {
            return false
        }
        return EntityTag.ifNoneMatch(ifNoneMatch, matches: etag)
    }

    /// Holds a `GET` whose client has the current value until the value changes (200 with the new one) or `seconds`
    /// pass (304); either answer says `Preference-Applied: wait=<seconds>`.
    private func waitForChange(
        _ unchanged: GatewayResponse, _ held: SubscriptionHub.CurrentResult, _ key: SubscriptionHub.Key,
        _ args: ConvexValue, _ upstream: any ConvexUpstream, _ seconds: Int, _ format: OutputFormat,
        _ context: ResponseContext
    ) async -> GatewayResponse {
        var answer = unchanged
        if let (update, ts) = await hub.nextChange(
            of: key, from: held.hash, args: args, upstream: upstream, format: format, timeout: .seconds(seconds))
        {
            answer = response(for: update.current, body: update.body, format: format, ts: ts)
        } else {
            // Unchanged: the value holds at the connection's latest snapshot.
            answer.setHeader(SnapshotFloor.timestampHeader, String(hub.sessionTimestamp(of: key.identity)))
        }
        answer.headers.append(("Preference-Applied", "wait=\(seconds)"))
        return finish(answer, context)
    }

    // MARK: One-shot calls

    /// Runs a query, mutation or action for the caller, with the gateway's one deadline handed to the upstream call.
    private func callResponse(
        _ kind: CallKind, _ function: UdfPath, _ input: ArgumentStage.Input, _ args: ConvexValue,
        _ request: ParsedRequest
    ) async -> GatewayResponse {
        // A one-shot query reads the connection's view: moved to the snapshot floor first (read-your-writes).
        let floor = kind == .query ? snapshotFloor(request) : 0
        let timeout = configuration.upstreamTimeout
        let result = await pool.withUpstream(for: request.identity) { _, upstream in
            await retryingWithFreshSpec(function, input, args) { args -> Result<UpstreamAnswer?, UpstreamFailure> in
                do throws(UpstreamFailure) {  // Typed inputs (Typed/) retried with a fresh spec
                    try await upstream.waitUntilConnected(timeout: configuration.connectTimeout)
                    if floor > 0, await upstream.waitForView(atLeast: floor, timeout: timeout) < floor {
                        return .success(nil)
                    }
                    return .success(try await upstream.call(kind, function.canonical, args: args, timeout: timeout))
                } catch {
                    return .failure(error)
                }
            }
        }
        switch result {
        case .success(let answer?):
            var response = GatewayResponse.json(render(answer.value, request.format))
            if let ts = answer.ts {
                if kind == .mutation { lastCommit.committed(ts) }
                response.headers.append((SnapshotFloor.timestampHeader, String(ts)))
            }
            return response
        case .success(nil):
            return errorResponse(.timestampNotReached(floor, seconds: timeout.seconds), format: request.format)
        case .failure(let failure):
            return errorResponse(failure, format: request.format)
        }
    }

    private func readiness() async -> GatewayResponse {
        let (_, upstream) = pool.upstream(for: .anonymous)
        do {
            try await upstream.waitUntilConnected(timeout: .seconds(1))
            return .json(Array(#"{"status":"ready"}"#.utf8))
        } catch {
            return errorResponse(.upstreamUnavailable("not connected"), format: configuration.defaultFormat)
        }
    }

    // MARK: Stream tickets

    /// `POST /stream-tickets`: 201 with a ticket for the caller's token (Access/StreamTickets.swift).
    /// - Throws: 401 without a token, or for one a ticket cannot be made from.
    private func streamTicket(for request: ParsedRequest) throws(GatewayError) -> GatewayResponse {
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
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }
}
