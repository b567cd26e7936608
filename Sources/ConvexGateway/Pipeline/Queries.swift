import ConvexSyncProtocol
import ConvexValues
import HTTPFields

/// `GET /query/<function>` and `HEAD`: answered from the live subscription of the caller, function and arguments
/// (at once when it has a result new enough, else once its first result comes), with the value's `ETag`.
extension GatewayCore {
    func hotOrColdQuery(
        _ request: ParsedRequest, _ context: ResponseContext, _ function: UdfPath, _ input: ArgumentStage.Input,
        _ args: ConvexValue, specGeneration: UInt64
    ) -> GatewayHandling {
        let format = request.format
        let (identityID, upstream) = pool.upstream(for: request.identity)
        let key = SubscriptionHub.Key(identity: identityID, function: function, args: args)
        let longPoll = longPollWait(request, context)
        let floor = snapshotFloor(request)
        // A live result answers at once when its snapshot is new enough (read-your-writes, SnapshotFloor.swift).
        if let hot = hub.currentBody(for: key, format: format), hot.ts >= floor {
            let answer = response(for: hot.current, body: hot.body, format: format, ts: hot.ts)
            if case .value = hot.current.result {
                rememberHotTarget(request, key: key, live: hot.live, specGeneration: specGeneration)
                if let longPoll, Self.holds(context, answer) {
                    return .deferred { [self] in
                        await .response(
                            waitForChange(answer, hot.current, key, args, upstream, longPoll, format, context))
                    }
                }
            }
            return .respond(answer)
        }
        return .deferred { [self] in
            if let refusal = await readyToRead(at: floor, identity: identityID, upstream: upstream, format: format) {
                return .response(refusal)
            }
            if let (current, ts) = await hub.firstResult(
                for: key, args: args, upstream: upstream, timeout: configuration.upstreamTimeout)
            {
                let body: [UInt8] = if case .value(let v) = current.result { render(v, format) } else { [] }
                let answer = response(for: current, body: body, format: format, ts: ts)
                if let longPoll, Self.holds(context, answer) {
                    return await .response(
                        waitForChange(answer, current, key, args, upstream, longPoll, format, context))
                }
                return .response(answer)
            }
            if hub.subscriptionCount >= configuration.maxSubscriptions {
                return .response(await callResponse(.query, function, input, args, request))
            }
            return .response(
                errorResponse(.upstreamTimeout(seconds: configuration.upstreamTimeout.seconds), format: format))
        }
    }

    /// The answer to a query from a live result that holds at snapshot `ts`: the value with its `ETag`, or the
    /// function's error; either with `Convex-Timestamp`.
    func response(
        for current: SubscriptionHub.CurrentResult, body: [UInt8], format: OutputFormat, ts: UInt64
    ) -> GatewayResponse {
        var response: GatewayResponse
        switch current.result {
        case .value:
            response = GatewayResponse.json(body)
            response.headers.append(("ETag", Self.etag(hash: current.hash, format: format)))
        case .failure(let failure):
            response = errorResponse(failure, format: format)
        }
        response.headers.append((SnapshotFloor.timestampHeader, String(ts)))
        return response
    }

    /// A value's entity tag: its hash and output mode, `"<16 hex digits>-<format>"`. It names the content, not the
    /// subscription, so it holds across re-subscriptions, gateway restarts and replicas; the gzip-coded body has
    /// `"…-<format>-gzip"` (EntityTag.swift).
    static func etag(hash: UInt64, format: OutputFormat) -> String {
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "-" + format.rawValue + "\""
    }
}
