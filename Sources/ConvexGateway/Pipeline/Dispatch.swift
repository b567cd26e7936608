import ConvexSyncProtocol
import ConvexValues

/// The dispatch stage: a parsed request goes to the stage of its route kind, each a type in a file named for what it
/// serves: queries (Queries.swift, with LongPoll.swift; read-your-writes in ReadYourWrites/), many queries at one
/// snapshot (BatchQuery.swift), calls (Calls.swift), event streams (Streams.swift) and the gateway's own routes
/// (SystemRoutes.swift). Each returns its outcome or throws; GatewayCore.handle completes either (Finish.swift).
extension GatewayCore {
    func dispatch(_ request: ParsedRequest, _ context: ResponseContext) throws(GatewayError) -> StageOutcome {
        switch request.route {
        case .health:
            return .now(systemRoutes.health())
        case .ready:
            return .later { [systemRoutes] () async throws(GatewayError) -> GatewayOutcome in
                .response(try await systemRoutes.readiness())
            }
        case .metrics:
            return .now(systemRoutes.metricsPage())
        case .openAPI:
            return .now(try systemRoutes.openAPI(request))
        case .clientScript:
            return .now(ClientScript.response)
        case .streamTickets:
            return .now(try systemRoutes.streamTicket(for: request))
        case .query(let function) where request.method == "POST":
            return try call(.query, function, request)
        case .mutation(let function):
            return try call(.mutation, function, request)
        case .action(let function):
            return try call(.action, function, request)
        case .query(let function):
            let specGeneration = functionSpecs?.generation ?? 0
            let input = ArgumentStage.Input.query(request.query)
            let args = try arguments.arguments(input, for: function)
            if request.wantsEventStream {
                return try streams.open(request, [StreamSubscription(id: nil, function: function, args: args)])
            }
            return queries.get(request, context, function, input, args, specGeneration: specGeneration)
        case .queryMany:
            return try batchQueries.get(request, context)
        case .subscribe(let function):
            let args = try arguments.arguments(.query(request.query), for: function)
            return try streams.open(request, [StreamSubscription(id: nil, function: function, args: args)])
        case .subscribeMany:
            return try streams.open(request, try streams.subscriptions(request))
        }
    }

    /// A call with the arguments of the request's body.
    private func call(_ kind: CallKind, _ function: UdfPath, _ request: ParsedRequest) throws(GatewayError)
        -> StageOutcome
    {
        let input = try arguments.bodyInput(request)
        let args = try arguments.arguments(input, for: function)
        return .later { [calls] () async throws(GatewayError) -> GatewayOutcome in
            .response(try await calls.call(kind, function, input, args, request))
        }
    }
}
