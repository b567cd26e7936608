import ConvexSyncProtocol
import ConvexValues
import Synchronization

/// The dispatch stage for event streams: `/subscribe/<function>` (one subscription) and `/subscribe?sub.<id>=…`
/// (many on one connection). Both wait for every subscription's first result before the stream starts, so an
/// unknown function, bad arguments or refused credentials get a plain HTTP error (an `EventSource` then stops
/// instead of reconnecting forever).
extension GatewayCore {
    /// Bytes a stream may have queued before a new value replaces what is queued instead of joining it.
    static let streamBufferLimit = 32 * 1024

    /// Headers of every event stream, before the CORS headers.
    static let eventStreamHeaders: [(String, String)] = [
        ("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
        ("Referrer-Policy", "no-referrer"),
    ]

    static let streamPreamble = Array("retry: 3000\n: connected\n\n".utf8)

    func startStream(
        _ request: ParsedRequest, _ context: ResponseContext, _ function: UdfPath, _ args: ConvexValue
    ) async -> GatewayOutcome {
        let format = request.format
        let (identityID, upstream) = pool.upstream(for: request.identity)
        let key = SubscriptionHub.Key(identity: identityID, function: function, args: args)
        if let refusal = await firstResultsRefusal(of: [(nil, key, args)], upstream: upstream, format: format) {
            return .response(finish(refusal, context))
        }
        let skipHash = request.request.header("last-event-id").flatMap(SubscriptionHub.hash(fromEventID:))
        let patches = request.wantsPatches
        return eventStream(context, upstream: upstream) { output in
            let sink = SingleSubscriptionStream(
                output: output, format: format, limit: Self.streamBufferLimit, patches: patches, resumeHash: skipHash)
            return ([StreamAttachments.Attachment(sink: sink, key: key, args: args, skipHash: skipHash)], output.finish)
        }
    }

    /// The subscriptions of a multi-subscription stream URL, with their arguments typed.
    func streamSubscriptions(_ request: ParsedRequest) throws(GatewayError) -> [(
        id: String, function: UdfPath, args: ConvexValue
    )] {
        let parsed = try StreamSubscriptions(request.query, limit: configuration.maxStreamSubscriptions)
        var typed: [(id: String, function: UdfPath, args: ConvexValue)] = []
        for subscription in parsed.subscriptions {
            do {
                typed.append(
                    (
                        subscription.id, subscription.function,
                        try arguments(subscription.input, for: subscription.function)
                    ))
            } catch {
                throw error.naming(subscription: subscription.id)
            }
        }
        return typed
    }

    func startMultiStream(
        _ request: ParsedRequest, _ context: ResponseContext,
        _ subscriptions: [(id: String, function: UdfPath, args: ConvexValue)]
    ) async -> GatewayOutcome {
        let format = request.format
        let (identityID, upstream) = pool.upstream(for: request.identity)
        let keyed = subscriptions.map {
            (
                id: $0.id, key: SubscriptionHub.Key(identity: identityID, function: $0.function, args: $0.args),
                args: $0.args
            )
        }
        if let refusal = await firstResultsRefusal(
            of: keyed.map { ($0.id, $0.key, $0.args) }, upstream: upstream, format: format)
        {
            return .response(finish(refusal, context))
        }
        let lastEventID = request.request.header("last-event-id")
        let patches = request.wantsPatches
        return eventStream(context, upstream: upstream) { output in
            let stream = MultiSubscriptionStream(
                ids: keyed.map(\.id), format: format, output: output, limit: Self.streamBufferLimit,
                patches: patches, resumeFrom: lastEventID)
            let attachments = zip(stream.makeMembers(), keyed).map { member, subscription in
                StreamAttachments.Attachment(
                    sink: member, key: subscription.key, args: subscription.args, skipHash: nil)
            }
            return (attachments, stream.end)
        }
    }

    /// An event stream whose output, once the server has it, is attached to the hub through the sinks `makeSinks`
    /// makes; `end` ends the stream if the hub refuses one of them (shutting down, or at its subscription limit).
    private func eventStream(
        _ context: ResponseContext, upstream: any ConvexUpstream,
        sinks makeSinks:
            @escaping @Sendable (any EventStreamOutput) -> (
                [StreamAttachments.Attachment], end: @Sendable () -> Void
            )
    ) -> GatewayOutcome {
        _ = finish(GatewayResponse(status: 200, body: []), context)
        let attachments = StreamAttachments()
        let (hub, logger, openStreams) = (self.hub, self.logger, self.openStreams)
        return .stream(
            EventStreamStart(
                headers: Self.eventStreamHeaders + context.headers,
                preamble: Self.streamPreamble,
                attach: { output in
                    openStreams.opened(output)
                    let (sinks, end) = makeSinks(output)
                    attachments.attach(sinks) { attachment throws(SubscriptionHub.AttachError) in
                        try hub.attach(
                            attachment.sink, to: attachment.key, args: attachment.args, upstream: upstream,
                            skipHash: attachment.skipHash)
                    } ifRefused: { error in
                        logger.debug("stream refused", metadata: ["error": "\(error)"])
                        end()
                    }
                },
                detach: { output in
                    openStreams.closed(output)
                    attachments.detach { hub.detach($0.sink, from: $0.key) }
                }
            ))
    }

    /// Waits for the first result of every subscription (all at once); the error response that refuses the stream,
    /// if any: no result in time, the subscription limit, or a result that can never stream (unknown function, bad
    /// arguments, refused credentials). `id` names the subscription of a multi-subscription stream in the message.
    private func firstResultsRefusal(
        of subscriptions: [(id: String?, key: SubscriptionHub.Key, args: ConvexValue)], upstream: any ConvexUpstream,
        format: OutputFormat
    ) async -> GatewayResponse? {
        do throws(UpstreamFailure) {
            try await upstream.waitUntilConnected(timeout: configuration.connectTimeout)
        } catch {
            return errorResponse(error, format: format)
        }
        let hub = self.hub
        let timeout = configuration.upstreamTimeout
        let firsts = await withTaskGroup(of: (Int, SubscriptionHub.Snapshot?).self) { group in
            for (index, subscription) in subscriptions.enumerated() {
                group.addTask {
                    (
                        index,
                        await hub.firstResult(
                            for: subscription.key, args: subscription.args, upstream: upstream, timeout: timeout)
                    )
                }
            }
            var firsts = [SubscriptionHub.Snapshot?](repeating: nil, count: subscriptions.count)
            for await (index, snapshot) in group { firsts[index] = snapshot }
            return firsts
        }
        for (subscription, first) in zip(subscriptions, firsts) {
            var error: GatewayError
            if let first {
                guard case .failure(let failure) = first.result, failure.refusesStream else { continue }
                error = failure.gatewayError
            } else {
                error =
                    hub.subscriptionCount >= configuration.maxSubscriptions
                    ? .overloaded : .upstreamTimeout(seconds: timeout.seconds)
            }
            if let id = subscription.id { error = error.naming(subscription: id) }
            return errorResponse(error, format: format)
        }
        return nil
    }

    /// Sends the heartbeat comment to every open stream.
    package func sendHeartbeats() {
        openStreams.heartbeat()
    }
}

/// The hub attachments of one stream. The server may report the client gone (`detach`) before the stream has
/// attached, so attaching after a detach attaches nothing, and a detach undoes exactly what was attached.
final class StreamAttachments: Sendable {
    struct Attachment: Sendable {
        var sink: any EventSink
        var key: SubscriptionHub.Key
        var args: ConvexValue
        /// From a single-subscription stream's `Last-Event-ID`: the first result is not sent if it has this hash.
        var skipHash: UInt64?
    }

    private enum State {
        case pending
        case attached([Attachment])
        case detached
    }

    private let state = Mutex<State>(.pending)

    func attach(
        _ attachments: [Attachment], _ attachOne: (Attachment) throws(SubscriptionHub.AttachError) -> Void,
        ifRefused: (SubscriptionHub.AttachError) -> Void
    ) {
        let refusal = state.withLock { state -> SubscriptionHub.AttachError? in
            guard case .pending = state else { return nil }
            var attached: [Attachment] = []
            defer { state = .attached(attached) }
            for attachment in attachments {
                do throws(SubscriptionHub.AttachError) {
                    try attachOne(attachment)
                    attached.append(attachment)
                } catch {
                    return error
                }
            }
            return nil
        }
        if let refusal { ifRefused(refusal) }
    }

    func detach(_ detachOne: (Attachment) -> Void) {
        let attached = state.withLock { state -> [Attachment] in
            defer { state = .detached }
            if case .attached(let attached) = state { return attached }
            return []
        }
        for attachment in attached { detachOne(attachment) }
    }
}
