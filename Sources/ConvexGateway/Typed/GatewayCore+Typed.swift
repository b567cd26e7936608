import ConvexValues

/// Typed inputs and the per-deployment OpenAPI document, as used by ``GatewayCore``'s routing.
extension GatewayCore {
    /// Arguments coerced by the function's validators when a function spec is loaded; unchanged otherwise.
    func typed(_ function: FunctionPath, _ args: ConvexValue) throws(GatewayError) -> ConvexValue {
        guard let spec = functionSpecs?.current else { return args }
        do {
            return try spec.coerce(args, for: function)
        } catch {
            throw error.gatewayError
        }
    }

    /// Runs a call; when it fails as an unknown function (404) or with invalid arguments (400) — neither ran the
    /// function — refetches the spec (rate-limited) and, if the fresh spec coerces the arguments differently, calls
    /// once more with them.
    func retryingWithFreshSpec(
        _ function: FunctionPath, _ args: ConvexValue, _ perform: (ConvexValue) async -> GatewayResponse
    ) async -> GatewayResponse {
        let first = await perform(args)
        guard let specs = functionSpecs, first.status == 400 || first.status == 404 else { return first }
        guard let fresh = await specs.refresh(), let retried = try? fresh.coerce(args, for: function), retried != args
        else { return first }
        return await perform(retried)
    }

    /// `functions=1` (or `true`) on `/openapi.yaml` asks for the per-deployment document.
    static func wantsFunctionsDocument(_ request: GatewayRequest) -> Bool {
        request.query.contains { $0.name == "functions" && ($0.value == "1" || $0.value == "true") }
    }

    /// The per-deployment document (JSON text, which is YAML 1.2), or 404 without a function spec.
    func functionsDocument(_ format: OutputFormat) throws(GatewayError) -> GatewayResponse {
        guard let spec = functionSpecs?.current else {
            throw GatewayError(
                status: 404, code: .routeNotFound,
                message: "No function spec is available; configure the deployment's admin key (--admin-key) to get the functions document")
        }
        let document = FunctionOpenAPI.document(spec, format: format, include: access.configuration.functions.permits)
        return GatewayResponse(
            status: 200, headers: [("Content-Type", "application/yaml")], body: document.json(mode: .plain))
    }
}

extension GatewayCore.Route {
    /// Whether handling this request uses the function spec (so it should wait for the first fetch).
    func usesFunctionSpec(_ request: GatewayRequest) -> Bool {
        switch self {
        case .query, .mutation, .action, .subscribe: true
        case .openAPI: GatewayCore.wantsFunctionsDocument(request)
        case .health, .ready, .metrics: false
        }
    }
}
