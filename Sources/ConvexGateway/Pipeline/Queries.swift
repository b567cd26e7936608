import ConvexSyncProtocol
import ConvexValues
import HTTPFields
import Logging

/// The query stage: `GET /query/<function>` and `HEAD`, answered from the live subscription of the caller, function
/// and arguments (at once when it has a result new enough, else once its first result comes), with the value's
/// `ETag`; a long-poll waits for the value to change (LongPoll.swift).
struct Queries: Sendable {
    let hub: SubscriptionHub
    let pool: UpstreamPool
    let readYourWrites: ReadYourWrites
    /// The one-shot query a `GET` falls back to when the subscription limit, or the caller's, is reached.
    let calls: Calls
    /// Where an anonymous answer's target is remembered for the hot path (HotPath.swift).
    let hotTargets: HotPath.Targets
    let configuration: GatewayConfiguration
    let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    let logger: Logger
    /// The long-polls each client holds waiting, against its share.
    let longPolls: ClientShares

    func get(
        _ request: ParsedRequest, _ context: ResponseContext, _ function: UdfPath, _ input: ArgumentStage.Input,
        _ args: ConvexValue, specFetchCount: UInt64
    ) throws(GatewayError) -> GatewayAnswer {
        let format = request.format
        let (identityID, upstream) = try pool.upstream(for: request.identity, from: request.address)
        let key = SubscriptionHub.Key(identity: identityID, function: function, args: args)
        let caller = SubscriptionCaller(client: request.client)
        let longPoll = LongPoll.wait(request, context, maxSeconds: configuration.maxWaitSeconds)
        let floor = readYourWrites.floor(minTimestamp: request.minTimestamp)
        // A live result answers at once when its snapshot is new enough (read-your-writes, ReadYourWrites/SnapshotFloor.swift).
        if let hot = hub.currentBody(for: key, format: format), hot.ts >= floor {
            let answer = answer(for: hot.current, body: hot.body, format: format, ts: hot.ts)
            if case .value = hot.current.result {
                hotTargets.remember(request, key: key, live: hot.live, specFetchCount: specFetchCount)
                if let longPoll, LongPoll.holds(context, answer) {
                    return .later {
                        .response(
                            await waitForChange(
                                answer, hot.current, key, args, caller, request.client, upstream, longPoll, format))
                    }
                }
            }
            return .now(answer)
        }
        return .later { () async throws(GatewayError) -> GatewayOutcome in
            try await readYourWrites.ready(at: floor, identity: identityID, upstream: upstream)
            let first = await hub.firstResult(
                for: key, args: args, caller: caller, upstream: upstream, timeout: configuration.upstreamTimeout)
            switch first {
            case .result(let current, let ts):
                let body: [UInt8] = if case .value(let v) = current.result { render(v, format) } else { [] }
                let answer = answer(for: current, body: body, format: format, ts: ts)
                if let longPoll, LongPoll.holds(context, answer) {
                    return await .response(
                        waitForChange(answer, current, key, args, caller, request.client, upstream, longPoll, format))
                }
                return .response(answer)
            case .full:
                // At the subscription limit, or the caller's: a one-shot query answers, and no subscription is made.
                return .response(try await calls.call(.query, function, input, args, request))
            case .noResult:
                throw await hub.noFirstResult(first, timeout: configuration.upstreamTimeout, upstream: upstream)
            }
        }
    }

    /// The answer to a query from a live result that holds at snapshot `ts`: the value with its `ETag`, or the
    /// function's error; either with `Convex-Timestamp`.
    func answer(
        for current: CurrentResult, body: [UInt8], format: OutputFormat, ts: ConvexTimestamp
    ) -> GatewayResponse {
        var response: GatewayResponse
        switch current.result {
        case .value:
            response = GatewayResponse.json(body)
            response.headers.append((HeaderName.eTag, Self.etag(hash: current.hash, format: format)))
        case .failure(let failure):
            response = GatewayResponse.error(failure.gatewayError(logging: logger)) { render($0, format) }
        }
        response.headers.append((HeaderName.convexTimestamp, String(ts.nanoseconds)))
        return response
    }

    /// A value's entity tag: its hash and output mode, `"<hash>-<format>"`. It names the content, not the
    /// subscription, so it holds across re-subscriptions, gateway restarts and replicas; the gzip-coded body has
    /// `"…-<format>-gzip"` (EntityTag.swift).
    static func etag(hash: ContentHash, format: OutputFormat) -> String {
        "\"" + hash.text + "-" + format.rawValue + "\""
    }

    /// Holds a `GET` whose client has the current value (``LongPoll``).
    private func waitForChange(
        _ unchanged: GatewayResponse, _ held: CurrentResult, _ key: SubscriptionHub.Key,
        _ args: ConvexValue, _ caller: SubscriptionCaller, _ client: ClientKey, _ upstream: any ConvexUpstream,
        _ seconds: Int,
        _ format: OutputFormat
    ) async -> GatewayResponse {
        let member = SubscriptionHub.Member(key: key, args: args, held: held.hash)
        return await LongPoll.hold(
            unchanged, members: [member], caller: caller, waiting: (longPolls, client), hub: hub, upstream: upstream,
            format: format,
            seconds: seconds
        ) { update, ts in
            answer(for: update.current, body: update.body, format: format, ts: ts)
        }
    }
}
