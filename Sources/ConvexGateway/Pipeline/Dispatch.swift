import ConvexSyncProtocol
import ConvexValues

/// The dispatch stage: a parsed request goes to the stage of its route kind, each in a file named for what it serves:
/// queries (Queries.swift, with ReadYourWrites.swift and LongPoll.swift), many queries at one snapshot
/// (BatchQuery.swift), calls (Calls.swift), event streams (Streams.swift) and the gateway's own routes
/// (SystemRoutes.swift). Each returns its answer as it is; GatewayCore.handle completes it (Finish.swift).
extension GatewayCore {
    func dispatch(_ request: ParsedRequest, _ context: ResponseContext) -> GatewayHandling {
        do throws(GatewayError) {
            switch request.route {
            case .health:
                return .respond(.json(Array(#"{"status":"ok"}"#.utf8)))
            case .ready:
                return .deferred { [self] in .response(await readiness()) }
            case .metrics:
                let body = metrics.render()
                return .respond(
                    GatewayResponse(
                        status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                        body: body))
            case .openAPI:
                if request.wantsFunctionsDocument {  // Typed/FunctionOpenAPI.swift
                    return .respond(try functionsDocument(request.format))
                }
                guard let document = openAPIDocument else {
                    throw GatewayError(
                        code: .routeNotFound,
                        message: "The OpenAPI document is not available on this gateway")
                }
                return .respond(
                    GatewayResponse(status: 200, headers: [("Content-Type", "application/yaml")], body: document))
            case .clientScript:
                return .respond(ClientScript.response)
            case .query(let function) where request.method == "POST":
                let input = try bodyInput(request)
                let args = try arguments(input, for: function)
                return .deferred { [self] in
                    .response(await callResponse(.query, function, input, args, request))
                }
            case .query(let function):
                let specGeneration = functionSpecs?.generation ?? 0
                let input = ArgumentStage.Input.query(request.query)
                let args = try arguments(input, for: function)
                if request.wantsEventStream {
                    let subscription = StreamSubscription(id: nil, function: function, args: args)
                    return try admitStream { [self] in await startStream(request, [subscription]) }
                }
                return hotOrColdQuery(request, context, function, input, args, specGeneration: specGeneration)
            case .subscribe(let function):
                let args = try arguments(.query(request.query), for: function)
                let subscription = StreamSubscription(id: nil, function: function, args: args)
                return try admitStream { [self] in await startStream(request, [subscription]) }
            case .queryMany:
                return try batchQuery(request, context)
            case .subscribeMany:
                let subscriptions = try streamSubscriptions(request)
                return try admitStream { [self] in await startStream(request, subscriptions) }
            case .streamTickets:
                return .respond(try streamTicket(for: request))
            case .mutation(let function), .action(let function):
                let kind: CallKind = if case .mutation = request.route { .mutation } else { .action }
                let input = try bodyInput(request)
                let args = try arguments(input, for: function)
                return .deferred { [self] in
                    .response(await callResponse(kind, function, input, args, request))
                }
            }
        } catch {
            return .respond(errorResponse(error, format: request.format))
        }
    }

    func bodyInput(_ request: ParsedRequest) throws(GatewayError) -> ArgumentStage.Input {
        try ArgumentStage.input(
            fromBody: request.request.body, contentType: request.request.header("content-type"),
            maxBytes: configuration.maxBodyBytes)
    }

    /// The typed-arguments stage with the current function spec.
    func arguments(_ input: ArgumentStage.Input, for function: UdfPath) throws(GatewayError) -> ConvexValue {
        try ArgumentStage.arguments(input, for: function, spec: functionSpecs?.current)
    }
}
