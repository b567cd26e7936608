import ConvexSyncProtocol
import ConvexValues

/// Typed inputs as the pipeline uses them: a call retried with a fresh spec, and which requests use the spec.
extension FunctionSpecStore {
    /// Runs a call; when it fails without running the function (unknown function or refused arguments), refetches
    /// the spec (rate-limited) and, if the fresh spec types the arguments differently, calls once more with them.
    static func retrying<Success>(
        with specs: FunctionSpecStore?, _ function: UdfPath, _ input: ArgumentStage.Input, _ args: ConvexValue,
        _ perform: (ConvexValue) async -> Result<Success, UpstreamFailure>
    ) async -> Result<Success, UpstreamFailure> {
        let first = await perform(args)
        guard let specs, case .failure(let failure) = first, failure.ranNoFunction else { return first }
        guard let fresh = await specs.refresh(),
            let retried = try? ArgumentStage.arguments(input, for: function, spec: fresh), retried != args
        else { return first }
        return await perform(retried)
    }
}

extension ParsedRequest {
    /// `functions=1` (or `true`) on `/openapi.yaml` asks for the per-deployment document.
    var wantsFunctionsDocument: Bool {
        query.values(named: "functions").contains { $0 == "1" || $0 == "true" }
    }

    /// Whether handling this request types its inputs by the function spec (so it should wait for the first fetch;
    /// the functions document waits in its own stage).
    var usesFunctionSpec: Bool { route.row.typed }
}
