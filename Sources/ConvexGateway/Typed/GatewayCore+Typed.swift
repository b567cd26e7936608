import ConvexSyncProtocol
import ConvexValues

/// Typed inputs and the per-deployment OpenAPI document, as the pipeline uses them.
extension GatewayCore {
    /// Runs a call; when it fails without running the function (unknown function or refused arguments), refetches
    /// the spec (rate-limited) and, if the fresh spec types the arguments differently, calls once more with them.
    func retryingWithFreshSpec<Success>(
        _ function: UdfPath, _ input: ArgumentStage.Input, _ args: ConvexValue,
        _ perform: (ConvexValue) async -> Result<Success, UpstreamFailure>
    ) async -> Result<Success, UpstreamFailure> {
        let first = await perform(args)
        guard let specs = functionSpecs, case .failure(let failure) = first, failure.ranNoFunction else { return first }
        guard let fresh = await specs.refresh(),
            let retried = try? ArgumentStage.arguments(input, for: function, spec: fresh), retried != args
        else { return first }
        return await perform(retried)
    }

    /// The per-deployment document (JSON text, which is YAML 1.2), or 404 without a function spec.
    func functionsDocument(_ format: OutputFormat) throws(GatewayError) -> GatewayResponse {
        guard let spec = functionSpecs?.current else {
            throw GatewayError(
                status: 404, code: .routeNotFound,
                message:
                    "No function spec is available; configure the deployment's admin key (--admin-key) to get the functions document"
            )
        }
        let document = FunctionOpenAPI.document(spec, format: format, include: access.configuration.functions.permits)
        return GatewayResponse(
            status: 200, headers: [("Content-Type", "application/yaml")], body: document.json(mode: .plain))
    }
}

extension ParsedRequest {
    /// `functions=1` (or `true`) on `/openapi.yaml` asks for the per-deployment document.
    var wantsFunctionsDocument: Bool {
        query.values(named: "functions").contains { $0 == "1" || $0 == "true" }
    }

    /// Whether handling this request uses the function spec (so it should wait for the first fetch).
    var usesFunctionSpec: Bool {
        switch route {
        case .query, .queryMany, .mutation, .action, .subscribe, .subscribeMany: true
        case .openAPI: wantsFunctionsDocument
        case .streamTickets, .health, .ready, .metrics, .clientScript: false
        }
    }
}
