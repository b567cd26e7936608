import ConvexSyncProtocol
import ConvexValues
import HTTPFields

/// Long-poll: a `GET` with `If-None-Match` and `Prefer: wait=<seconds>` whose tag names the current value is held
/// until the value changes (200) or the wait ends (304). Queries hold one value (``Queries/waitForChange``), a batch
/// its snapshot (BatchQuery.swift).
enum LongPoll {
    /// The wait a `GET` asks for with `If-None-Match` and `Prefer: wait=<seconds>`, bounded by `maxSeconds`
    /// (`--max-wait-seconds`); `nil` when it asks for none (or waiting is off).
    static func wait(_ request: ParsedRequest, _ context: ResponseContext, maxSeconds: Int) -> Int? {
        guard request.method == "GET", context.representation.ifNoneMatch != nil else { return nil }
        return Prefer.longPollWait(request.request.header("prefer"), maxSeconds: maxSeconds)
    }

    /// Whether the request's `If-None-Match` names the value `answer` carries, i.e. the client holds it already.
    static func holds(_ context: ResponseContext, _ answer: GatewayResponse) -> Bool {
        guard let ifNoneMatch = context.representation.ifNoneMatch, let etag = answer.header("ETag") else {
            return false
        }
        return EntityTag.ifNoneMatch(ifNoneMatch, matches: etag)
    }
}

extension Queries {
    /// Holds a `GET` whose client has the current value until the value changes (200 with the new one) or `seconds`
    /// pass (304); either answer says `Preference-Applied: wait=<seconds>`.
    func waitForChange(
        _ unchanged: GatewayResponse, _ held: SubscriptionHub.CurrentResult, _ key: SubscriptionHub.Key,
        _ args: ConvexValue, _ upstream: any ConvexUpstream, _ seconds: Int, _ format: OutputFormat
    ) async -> GatewayResponse {
        var answer = unchanged
        if let (update, ts) = await hub.nextChange(
            of: key, from: held.hash, args: args, upstream: upstream, format: format, timeout: .seconds(seconds))
        {
            answer = self.answer(for: update.current, body: update.body, format: format, ts: ts)
        } else {
            // Unchanged: the value holds at the connection's latest snapshot.
            answer.setHeader(SnapshotFloor.timestampHeader, String(hub.sessionTimestamp(of: key.identity)))
        }
        answer.headers.append(("Preference-Applied", "wait=\(seconds)"))
        return answer
    }
}
