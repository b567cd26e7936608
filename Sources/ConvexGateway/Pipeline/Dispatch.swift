import ConvexSyncProtocol
import ConvexValues

/// The route table and the dispatch stage: every route is one row (path, kind, methods, access class, whether it reads
/// the function spec, stage); a parsed request goes to its row's stage. The stages are types in files named for what
/// they serve: queries (Queries.swift, with LongPoll.swift; read-your-writes in ReadYourWrites/), many queries at one
/// snapshot (BatchQuery.swift), calls (Calls.swift), event streams (Streams.swift) and the gateway's own routes
/// (SystemRoutes.swift); the hot path (HotPath.swift) answers remembered `GET`s before any of this. Each stage returns
/// its outcome or throws; GatewayCore.handle completes either (Finish.swift).
extension Route {
    private static let read = ["GET", "HEAD"]

    /// Every route of the gateway. A new route is a row here, with its stage.
    static let table: [Row] = [
        .exact("/healthz", .system, methods: read, access: .open) { core, _, _ in .now(core.systemRoutes.health()) },
        .exact("/readyz", .system, methods: read, access: .open) { core, _, _ in
            .later { [systemRoutes = core.systemRoutes] () async throws(GatewayError) -> GatewayOutcome in
                .response(try await systemRoutes.readiness())
            }
        },
        .exact("/metrics", .system, methods: read, access: .keyed) { core, _, _ in
            .now(core.systemRoutes.metricsPage())
        },
        .exact("/openapi.yaml", .system, methods: read, access: .open) { core, request, _ throws(GatewayError) in
            // The functions document lists what callers may call, with its schemas: behind the API key, as the calls.
            if request.wantsFunctionsDocument { try core.access.requireAPIKey(request.request) }
            return try core.systemRoutes.openAPI(request)
        },
        .exact("/client.js", .system, methods: read, access: .open) { _, _, _ in .now(ClientScript.response) },
        .exact("/", .system, methods: read, access: .open) { core, _, _ throws(GatewayError) in
            guard core.configuration.demoPage else { throw GatewayError.routeNotFound("/") }
            return .now(DemoPage.file.response)
        },
        .exact("/stream-tickets", .system, methods: ["POST"], access: .rateLimited) {
            core, request, _ throws(GatewayError) in
            .now(try core.systemRoutes.streamTicket(for: request))
        },
        .function("/query/", .read, methods: ["GET", "HEAD", "POST"]) {
            core, function, request, context throws(GatewayError) in
            request.method == "POST"
                ? try core.call(.query, function, request) : try core.query(function, request, context)
        },
        .exact("/query", .read, methods: read, access: .functionCall, typed: true) {
            core, request, context throws(GatewayError) in
            try core.batchQueries.get(request, context)
        },
        .function("/mutation/", .call, methods: ["POST"]) { core, function, request, _ throws(GatewayError) in
            try core.call(.mutation, function, request)
        },
        .exact("/mutations", .call, methods: ["POST"], access: .functionCall, typed: true) {
            core, request, _ throws(GatewayError) in
            let batch = try MutationBatch(request, arguments: core.arguments)
            return .later {
                [calls = core.calls, arguments = core.arguments] () async throws(GatewayError) -> GatewayOutcome in
                .response(try await calls.sessionMutations(batch, request, arguments: arguments))
            }
        },
        .function("/action/", .call, methods: ["POST"]) { core, function, request, _ throws(GatewayError) in
            try core.call(.action, function, request)
        },
        .function("/subscribe/", .stream, methods: ["GET"]) { core, function, request, _ throws(GatewayError) in
            let args = try core.arguments.arguments(.query(request.query), for: function)
            return try core.streams.open(request, [StreamSubscription(id: nil, function: function, args: args)])
        },
        .exact("/subscribe", .stream, methods: ["GET"], access: .functionCall, typed: true) {
            core, request, _ throws(GatewayError) in
            try core.streams.open(request, try core.streams.subscriptions(request))
        },
    ]
}

extension GatewayCore {
    /// The dispatch stage: the request's row answers it.
    func dispatch(_ request: ParsedRequest, _ context: ResponseContext) throws(GatewayError) -> GatewayAnswer {
        try request.route.answer(self, request, context)
    }

    /// `GET /query/<function>`: the live value, or a stream when the request asks for one.
    fileprivate func query(
        _ function: UdfPath, _ request: ParsedRequest, _ context: ResponseContext
    ) throws(GatewayError) -> GatewayAnswer {
        let specFetchCount = functionSpecs?.fetchCount ?? 0
        let input = ArgumentStage.Input.query(request.query)
        let args = try arguments.arguments(input, for: function)
        if request.wantsEventStream {
            return try streams.open(request, [StreamSubscription(id: nil, function: function, args: args)])
        }
        return try queries.get(request, context, function, input, args, specFetchCount: specFetchCount)
    }

    /// A call with the arguments of the request's body.
    fileprivate func call(_ kind: CallKind, _ function: UdfPath, _ request: ParsedRequest) throws(GatewayError)
        -> GatewayAnswer
    {
        let input = try arguments.bodyInput(request)
        let args = try arguments.arguments(input, for: function)
        return .later { [calls] () async throws(GatewayError) -> GatewayOutcome in
            .response(try await calls.call(kind, function, input, args, request))
        }
    }
}
