import ConvexSyncProtocol
import ConvexValues

/// One-shot calls: mutations, actions and `POST /query/<function>`, each with the gateway's one deadline.
extension GatewayCore {
    /// Runs a query, mutation or action for the caller, with the gateway's one deadline handed to the upstream call.
    func callResponse(
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
}
