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
        if let hot = hub.currentBody(for: key, format: format) {
            let answer = response(for: hot.current, body: hot.body, format: format)
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
            do throws(UpstreamFailure) {
                try await upstream.waitUntilConnected(timeout: configuration.connectTimeout)
            } catch {
                return .response(finish(errorResponse(error, format: format), context))
            }
            if let current = await hub.firstResult(
                for: key, args: args, upstream: upstream, timeout: configuration.upstreamTimeout)
            {
                let body: [UInt8] = if case .value(let v) = current.result { render(v, format) } else { [] }
                let answer = response(for: current, body: body, format: format)
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

    func response(for current: SubscriptionHub.CurrentResult, body: [UInt8], format: OutputFormat) -> GatewayResponse {
        switch current.result {
        case .value:
            var response = GatewayResponse.json(body)
            response.headers.append(("ETag", Self.etag(hash: current.hash, format: format)))
            return response
        case .failure(let failure):
            return errorResponse(failure, format: format)
        }
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
    private func longPollWait(_ request: ParsedRequest, _ context: ResponseContext) -> Int? {
        guard request.method == "GET", context.representation.ifNoneMatch != nil else { return nil }
        return Prefer.longPollWait(request.request.header("prefer"), maxSeconds: configuration.maxWaitSeconds)
    }

    /// Whether the request's `If-None-Match` names the value `answer` carries, i.e. the client holds it already.
    private static func holds(_ context: ResponseContext, _ answer: GatewayResponse) -> Bool {
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
        if let update = await hub.nextChange(
            of: key, from: held.hash, args: args, upstream: upstream, format: format, timeout: .seconds(seconds))
        {
            answer = response(for: update.current, body: update.body, format: format)
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
        let result = await pool.withUpstream(for: request.identity) { _, upstream in
            await retryingWithFreshSpec(function, input, args) { args in  // Typed inputs (Typed/)
                do throws(UpstreamFailure) {
                    try await upstream.waitUntilConnected(timeout: configuration.connectTimeout)
                    return .success(
                        try await upstream.call(
                            kind, function.canonical, args: args, timeout: configuration.upstreamTimeout))
                } catch {
                    return .failure(error)
                }
            }
        }
        switch result {
        case .success(let value): return .json(render(value, request.format))
        case .failure(let failure): return errorResponse(failure, format: request.format)
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
