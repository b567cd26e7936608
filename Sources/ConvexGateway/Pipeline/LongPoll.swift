import ConvexSyncProtocol
import ConvexValues
import HTTPFields

/// Long-poll: a `GET` with `If-None-Match` and `Prefer: wait=<seconds>` whose tag names the current value is held
/// until the value changes (200) or the wait ends (304). Queries hold one value, a batch its snapshot: both through
/// ``hold(_:members:caller:hub:upstream:format:seconds:changed:)``.
enum LongPoll {
    /// The wait a `GET` asks for with `If-None-Match` and `Prefer: wait=<seconds>`, bounded by `maxSeconds`
    /// (`--max-wait-seconds`); `nil` when it asks for none (or waiting is off).
    static func wait(_ request: ParsedRequest, _ context: ResponseContext, maxSeconds: Int) -> Int? {
        guard request.method == "GET", context.representation.ifNoneMatch != nil else { return nil }
        return Prefer.longPollWait(request.request.header(HeaderName.prefer), maxSeconds: maxSeconds)
    }

    /// Whether the request's `If-None-Match` names the value `answer` carries, i.e. the client holds it already.
    static func holds(_ context: ResponseContext, _ answer: GatewayResponse) -> Bool {
        guard let ifNoneMatch = context.representation.ifNoneMatch, let etag = answer.header(HeaderName.eTag) else {
            return false
        }
        return EntityTag.ifNoneMatch(ifNoneMatch, matches: etag)
    }

    /// Holds an answer the client has (`unchanged`) until the result of any of `members` differs from the one its
    /// `held` hash names (200 with the answer `changed` makes of it) or `seconds` pass (`unchanged`, whose value holds
    /// at the connection's latest snapshot). `changed` returning `nil` also answers `unchanged`. Either answer says
    /// `Preference-Applied: wait=<seconds>`. A subscription made again meanwhile (it had expired) is `caller`'s.
    /// The wait holds one of `client`'s places in `waiting` (`--max-streams-per-client`): a client that holds them all
    /// gets 429 `TooManyLongPolls` at once.
    static func hold<Failure: Error>(
        _ unchanged: GatewayResponse, members: [SubscriptionHub.Member], caller: SubscriptionCaller,
        waiting: (shares: ClientShares, client: ClientKey),
        hub: SubscriptionHub, upstream: any ConvexUpstream, format: OutputFormat, seconds: Int,
        changed: (SubscriptionUpdate, _ ts: ConvexTimestamp) throws(Failure) -> GatewayResponse?
    ) async throws(Failure) -> GatewayResponse {
        guard waiting.shares.take(waiting.client) else {
            return GatewayResponse.error(.tooManyLongPolls(limit: waiting.shares.limit)) { $0.json(mode: format) }
        }
        defer { waiting.shares.release(waiting.client) }
        var answer = unchanged
        if let (update, ts) = await hub.nextChange(
            of: members, caller: caller, upstream: upstream, format: format, timeout: .seconds(seconds)),
            let changed = try changed(update, ts)
        {
            answer = changed
        } else {
            let ts = hub.sessionTimestamp(of: members.first?.key.identity ?? "")
            answer.setHeader(HeaderName.convexTimestamp, String(ts.nanoseconds))
        }
        answer.headers.append((HeaderName.preferenceApplied, "wait=\(seconds)"))
        return answer
    }
}
