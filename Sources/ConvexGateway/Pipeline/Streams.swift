import ConvexSyncProtocol
import ConvexValues
import HTTPFields
import Logging
import Synchronization

/// The stream stage: `/subscribe/<function>` (one subscription), `/subscribe?sub.<id>=…` (many on one connection) and
/// a `GET /query/<function>` that accepts only `text/event-stream`, one implementation. Every stream waits for each
/// subscription's first result before it starts, so an unknown function, bad arguments or refused credentials get a
/// plain HTTP error (an `EventSource` then stops instead of reconnecting forever). With a rate limit, a stream of `N`
/// subscriptions costs `N` requests.
struct Streams: Sendable {
    let hub: SubscriptionHub
    let pool: UpstreamPool
    /// The rate limit, charged one request per subscription.
    let access: AccessControl
    /// The streams open now, for heartbeats, the stream limit and the open-streams metric.
    let openStreams: OpenStreams
    let readYourWrites: ReadYourWrites
    let arguments: TypedArguments
    let configuration: GatewayConfiguration
    let logger: Logger

    /// Bytes a stream may have queued before a new value replaces what is queued instead of joining it.
    static let streamBufferLimit = 32 * 1024

    /// Headers of every event stream, before the CORS headers.
    static let eventStreamHeaders: [(String, String)] = [
        (HeaderName.contentType, "text/event-stream"), (HeaderName.cacheControl, "no-store"),
        (HeaderName.xAccelBuffering, "no"),
        (HeaderName.referrerPolicy, "no-referrer"),
    ]

    /// The subscriptions of a multi-subscription stream URL, with their arguments typed, once the rate limit is
    /// charged for them.
    /// - Throws: 400 for a bad list, 429 `RateLimited` when the client's budget does not hold a request per
    ///   subscription.
    func subscriptions(_ request: ParsedRequest) throws(GatewayError) -> [StreamSubscription] {
        let parsed = try StreamSubscriptions(request.query, limit: configuration.maxStreamSubscriptions)
        try access.chargeSubscriptions(parsed.subscriptions.count, remoteAddress: request.request.remoteAddress)
        return try parsed.typed(by: arguments)
    }

    /// Opens an event stream under the stream limit (StreamAdmission.swift): `/subscribe/<function>` (one
    /// subscription without an id, its own events) or `/subscribe?sub.<id>=…` (transition events).
    /// - Throws: 503 when the stream limit is reached, 429 when the client holds its share of it.
    func open(_ request: ParsedRequest, _ subscriptions: [StreamSubscription]) throws(GatewayError) -> GatewayAnswer {
        try admit(request.client) { () async throws(GatewayError) -> EventStreamStart in
            try await start(request, subscriptions)
        }
    }

    /// Starts an event stream once every subscription has its first result. The one place where a stream starts.
    private func start(
        _ request: ParsedRequest, _ subscriptions: [StreamSubscription]
    ) async throws(GatewayError) -> EventStreamStart {
        let format = request.format
        let (identityID, upstream) = try pool.upstream(for: request.identity, from: request.address)
        let keys = subscriptions.map { SubscriptionHub.Key(identity: identityID, function: $0.function, args: $0.args) }
        let caller = SubscriptionCaller(client: request.client)
        try await awaitFirstResults(
            of: zip(subscriptions, keys).map { ($0.id, $1, $0.args) }, identity: identityID, caller: caller,
            upstream: upstream, floor: readYourWrites.floor(minTimestamp: request.minTimestamp))
        let framing: EventStream.Framing =
            subscriptions.count == 1 && subscriptions[0].id == nil
            ? .function : .transitions(ids: subscriptions.map { $0.id ?? "" })
        let stream = (
            framing: framing, lastEventID: request.request.header(HeaderName.lastEventID), patches: request.wantsPatches
        )
        let attachments = StreamAttachments()
        let (hub, logger, openStreams) = (self.hub, self.logger, self.openStreams)
        return EventStreamStart(
            headers: Self.eventStreamHeaders,
            preamble: StreamWire.preamble,
            attach: { output in
                openStreams.opened(output, client: request.client)
                let sink = EventStream(
                    framing: stream.framing, count: keys.count, format: format, output: output,
                    limit: Self.streamBufferLimit, patches: stream.patches, resumeFrom: stream.lastEventID)
                let members = zip(keys, subscriptions).enumerated().map { index, pair in
                    SubscriptionHub.Member(key: pair.0, args: pair.1.args, held: sink.held[index])
                }
                attachments.attach(sink, keys: keys) { () throws(SubscriptionHub.AttachError) in
                    try hub.attach(sink, members: members, caller: caller, upstream: upstream)
                } ifRefused: { error in
                    logger.debug("stream refused", metadata: ["error": "\(error)"])
                    sink.end()
                }
            },
            detach: { output in
                openStreams.closed(output)
                attachments.detach { sink, keys in hub.detach(sink, members: keys) }
            }
        )
    }

    /// Waits for the first result of every subscription (all at once). The results first hold at `floor` or later
    /// (read-your-writes).
    /// - Throws: the error that refuses the stream: no result in time, a subscription limit (the gateway's, or
    ///   `caller`'s), a result that can never stream (unknown function, bad arguments, refused credentials), or a 504
    ///   when the deployment does not reach `floor`. `id` names the subscription of a multi-subscription stream in
    ///   the message.
    private func awaitFirstResults(
        of subscriptions: [(id: String?, key: SubscriptionHub.Key, args: ConvexValue)], identity: String,
        caller: SubscriptionCaller, upstream: any ConvexUpstream, floor: ConvexTimestamp
    ) async throws(GatewayError) {
        try await readYourWrites.ready(at: floor, identity: identity, upstream: upstream)
        let timeout = configuration.upstreamTimeout
        let firsts = await hub.firstResults(
            of: subscriptions.map { ($0.key, $0.args) }, caller: caller, upstream: upstream, timeout: timeout)
        // A subscription limit first: its 503 or 429 says when to come back.
        let full = firsts.contains { $0.isFull }
        for (subscription, first) in zip(subscriptions, firsts) {
            var error: GatewayError
            if let current = first.read?.current {
                guard case .failure(let failure) = current.result, failure.refusesStream else { continue }
                error = failure.gatewayError(logging: logger)
            } else {
                if full && !first.isFull { continue }
                error = await hub.noFirstResult(first, timeout: timeout, upstream: upstream)
            }
            if let id = subscription.id { error = error.naming(subscription: id) }
            throw error
        }
    }
}

/// One subscription of a stream: `id` names it on a `/subscribe?sub.<id>=…` stream, `nil` on `/subscribe/<function>`.
struct StreamSubscription: Sendable {
    var id: String?
    var function: UdfPath
    var args: ConvexValue
}

/// The hub attachment of one stream. The server may report the client gone (`detach`) before the stream has
/// attached, so attaching after a detach attaches nothing, and a detach undoes exactly what was attached.
final class StreamAttachments: Sendable {
    private enum State {
        case pending
        case attached(any EventSink, keys: [SubscriptionHub.Key])
        case detached
    }

    private let state = Mutex<State>(.pending)

    func attach(
        _ sink: any EventSink, keys: [SubscriptionHub.Key], _ attach: () throws(SubscriptionHub.AttachError) -> Void,
        ifRefused: (SubscriptionHub.AttachError) -> Void
    ) {
        let refusal = state.withLock { state -> SubscriptionHub.AttachError? in
            guard case .pending = state else { return nil }
            do throws(SubscriptionHub.AttachError) {
                try attach()
                state = .attached(sink, keys: keys)
                return nil
            } catch {
                state = .detached
                return error
            }
        }
        if let refusal { ifRefused(refusal) }
    }

    func detach(_ detach: (any EventSink, [SubscriptionHub.Key]) -> Void) {
        let attached = state.withLock { state -> (any EventSink, [SubscriptionHub.Key])? in
            defer { state = .detached }
            if case .attached(let sink, let keys) = state { return (sink, keys) }
            return nil
        }
        if let (sink, keys) = attached { detach(sink, keys) }
    }
}
