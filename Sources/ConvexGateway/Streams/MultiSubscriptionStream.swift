import Synchronization

/// A `/subscribe?sub.<id>=…` stream: many subscriptions on one connection (a browser allows only six per origin
/// over HTTP/1.1). Each subscription is attached to the hub as its own ``Member``; every event names it:
///
/// - `event: value`, `data: {"sub": "<id>", "value": <value>}`;
/// - `event: error`, `data: {"sub": "<id>", "error": {...}}` (the stream stays open);
/// - a failure of the whole stream (the caller's credentials were refused): `event: error` with `{"error": {...}}`
///   and no `sub`, then the stream ends.
///
/// Every event's `id:` is a ``StreamResumeID`` of what the client then holds, so a reconnect with `Last-Event-ID`
/// skips the subscriptions whose result is unchanged. A slow reader is coalesced per subscription: once more than
/// `limit` bytes wait, what is queued is replaced by the latest event of every subscription, so none is lost.
///
/// With `delta=json-patch` (``ValueDelta``), value events also carry `"v"`, the value's hash, and a change whose
/// patch the hub made is sent as `event: patch` with the subscription's `"sub"` when the client holds the patch's
/// base.
final class MultiSubscriptionStream: Sendable {
    /// One subscription of the stream, as the hub sees it.
    final class Member: EventSink {
        let stream: MultiSubscriptionStream
        let index: Int
        var format: OutputFormat { stream.format }
        var wantsPatches: Bool { stream.wantsPatches }

        init(stream: MultiSubscriptionStream, index: Int) {
            self.stream = stream
            self.index = index
        }

        func deliver(_ update: SubscriptionUpdate) { stream.deliver(update, index: index) }
        func finish() { stream.end() }
    }

    private struct Latest {
        var isFailure: Bool
        var hash: UInt64
        var body: [UInt8]
    }

    private struct State {
        /// What the client holds of each subscription (the resume id of the next event).
        var held: StreamResumeID
        /// Per subscription, a held result the first update may repeat (from `Last-Event-ID`): then it is not sent.
        var resumed: [UInt64?]
        /// Per subscription, the result last sent (or queued): its hash is the base a patch must apply to.
        var latest: [Latest?]
        var ended = false
    }

    let ids: [String]
    let format: OutputFormat
    let output: any EventStreamOutput
    let limit: Int
    let wantsPatches: Bool
    private let state: Mutex<State>

    /// - Parameters:
    ///   - ids: the subscription ids, in the order of the stream URL.
    ///   - resumeFrom: the `Last-Event-ID` the client sent, if any.
    init(
        ids: [String], format: OutputFormat, output: any EventStreamOutput, limit: Int, patches: Bool = false,
        resumeFrom: String?
    ) {
        self.ids = ids
        self.wantsPatches = patches
        self.format = format
        self.output = output
        self.limit = limit
        let held =
            resumeFrom.flatMap { StreamResumeID(parsing: $0, count: ids.count) } ?? StreamResumeID(count: ids.count)
        state = Mutex(State(held: held, resumed: held.held, latest: Array(repeating: nil, count: ids.count)))
    }

    /// The hub-facing sinks, one per subscription, in the order of ``ids`` (call once; the caller keeps them to
    /// detach them).
    func makeMembers() -> [Member] { ids.indices.map { Member(stream: self, index: $0) } }

    func deliver(_ update: SubscriptionUpdate, index: Int) {
        state.withLock { state in
            guard !state.ended else { return }
            if case .failure(.unauthenticated) = update.snapshot.result {
                // The credentials are gone for every subscription: one error for the stream, then its end.
                state.ended = true
                output.write(ServerSentEvent(event: "error", data: update.body).encoded())
                output.finish()
                return
            }
            let token = StreamResumeID.token(update.hash)
            state.held.held[index] = token
            let base = state.latest[index]?.hash
            state.latest[index] = Latest(isFailure: update.isFailure, hash: update.hash, body: update.body)
            if let resumed = state.resumed[index] {
                state.resumed[index] = nil
                if resumed == token { return }  // the client already has it
            }
            let id = state.held.text
            if output.pendingByteCount >= limit {
                // What is queued is dropped, patch bases among it: every subscription's full latest replaces it.
                var everything: [UInt8] = []
                for (other, latest) in state.latest.enumerated() {
                    if let latest { everything += event(index: other, latest, id: id) }
                }
                output.replacePending(with: everything)
            } else if wantsPatches, let patch = update.patch, patch.base == base {
                output.write(patchEvent(index: index, patch, id: id))
            } else {
                output.write(event(index: index, state.latest[index]!, id: id))
            }
        }
    }

    /// Ends the stream (a subscription's upstream ended, or the gateway is shutting down); the client reconnects.
    func end() {
        let first = state.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
        if first { output.finish() }
    }

    /// Ends the stream with a whole-stream error event.
    func end(with errorBody: [UInt8]) {
        state.withLock { state in
            guard !state.ended else { return }
            state.ended = true
            output.write(ServerSentEvent(event: "error", data: errorBody).encoded())
            output.finish()
        }
    }

    private func event(index: Int, _ latest: Latest, id: String) -> [UInt8] {
        var data: [UInt8] = []
        data.reserveCapacity(latest.body.count + ids[index].utf8.count + 24)
        data += #"{"sub":""#.utf8
        data += ids[index].utf8  // ids are [A-Za-z0-9_-]: no escaping needed
        if latest.isFailure {
            data += #"","#.utf8
            data += latest.body.dropFirst()  // {"error":{…}} becomes {"sub":"…","error":{…}}
        } else {
            if wantsPatches {
                data += #"","v":""#.utf8
                data += ValueDelta.hashText(latest.hash).utf8
            }
            data += #"","value":"#.utf8
            data += latest.body
            data += "}".utf8
        }
        return ServerSentEvent(event: latest.isFailure ? "error" : "value", id: id, data: data).encoded()
    }

    private func patchEvent(index: Int, _ patch: ValueDelta.Patch, id: String) -> [UInt8] {
        var data: [UInt8] = []
        data.reserveCapacity(patch.fields.count + ids[index].utf8.count + 12)
        data += #"{"sub":""#.utf8
        data += ids[index].utf8
        data += #"","#.utf8
        data += patch.fields
        data += "}".utf8
        return ServerSentEvent(event: "patch", id: id, data: data).encoded()
    }
}
