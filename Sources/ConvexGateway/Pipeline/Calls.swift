import ConvexSyncProtocol
import ConvexValues
import HTTPFields
import Logging

extension GatewayError {
    /// An action while its upstream connection runs ``GatewayConfiguration/maxActionsPerConnection`` of them.
    static let actionsPerConnectionReached = GatewayError(
        code: .overloaded,
        message:
            "The deployment's connection for this caller runs as many actions at once as the gateway lets it; "
            + "try again shortly",
        headers: [(HeaderName.retryAfter, "1")])
}

/// The call stage: mutations, actions and `POST /query/<function>`, each with the gateway's one deadline.
struct Calls: Sendable {
    let pool: UpstreamPool
    let readYourWrites: ReadYourWrites
    let functionSpecs: FunctionSpecStore?
    let configuration: GatewayConfiguration
    let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    let logger: Logger
    /// The calls each client has running, against its share (`--max-calls-per-client`).
    let running: ClientShares
    /// The actions running on each upstream connection (by identity key), at most
    /// ``GatewayConfiguration/maxActionsPerConnection``: Convex closes a connection that runs more than 1,000 at once,
    /// failing every call on it, and every anonymous caller shares one.
    let actionsPerConnection: Shares<String>

    /// Runs a query, mutation or action for the caller, with the gateway's one deadline handed to the upstream call;
    /// when the function spec may have typed the arguments wrongly, once more with a fresh spec (Typed/).
    /// - Throws: 429 `TooManyCalls` when the client has its share of calls running; the call's failure as the
    ///   gateway's error; 504 when a one-shot query's connection does not reach
    ///   the snapshot floor (read-your-writes) in time.
    func call(
        _ kind: CallKind, _ function: UdfPath, _ input: ArgumentStage.Input, _ args: ConvexValue,
        _ request: ParsedRequest
    ) async throws(GatewayError) -> GatewayResponse {
        guard running.take(request.client) else { throw .tooManyCalls(limit: running.limit) }
        defer { running.release(request.client) }
        // A one-shot query reads the connection's view: moved to the snapshot floor first (read-your-writes).
        let floor = kind == .query ? readYourWrites.floor(minTimestamp: request.minTimestamp) : .zero
        let timeout = configuration.upstreamTimeout
        let connectTimeout = configuration.connectTimeout
        let ran = try await pool.withUpstream(for: request.identity, from: request.address) {
            id, upstream -> Result<UpstreamAnswer?, UpstreamFailure>? in
            if kind == .action, !actionsPerConnection.take(id) { return nil }
            defer { if kind == .action { actionsPerConnection.release(id) } }
            return await FunctionSpecStore.retrying(with: functionSpecs, function, input, args) {
                args -> Result<UpstreamAnswer?, UpstreamFailure> in
                do throws(UpstreamFailure) {
                    try await upstream.waitUntilConnected(timeout: connectTimeout)
                    if floor > .zero, await upstream.waitForView(atLeast: floor, timeout: timeout) < floor {
                        // A refused connection's view does not move: the refusal is the answer then.
                        if let refusal = await upstream.credentialsRefusal() { throw refusal }
                        return .success(nil)
                    }
                    // The deployment's time, for the request's span (Tracing/RequestTracing.swift).
                    let upstreamTime = UpstreamTime.current
                    let started = upstreamTime?.clock.now
                    defer { if let started { upstreamTime?.add(since: started) } }
                    return .success(try await upstream.call(kind, function.canonical, args: args, timeout: timeout))
                } catch {
                    return .failure(error)
                }
            }
        }
        guard let result = ran else { throw .actionsPerConnectionReached }
        switch result {
        case .success(let answer?):
            var response = GatewayResponse.json(render(answer.value, request.format))
            if let ts = answer.ts {
                if kind == .mutation { readYourWrites.committed(ts) }
                response.headers.append((HeaderName.convexTimestamp, String(ts.nanoseconds)))
            }
            return response
        case .success(nil):
            throw .timestampNotReached(floor, seconds: timeout.seconds)
        case .failure(let failure):
            throw failure.gatewayError(logging: logger)
        }
    }
}
