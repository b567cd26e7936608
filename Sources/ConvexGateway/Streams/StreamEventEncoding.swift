import ConvexSyncProtocol

/// The bytes of the events a stream sends (docs/streams.md), made from plain values: no cache, no lock, no I/O.
/// ``StreamWire`` decides which event a delivery is; ``EventStream`` makes its bytes here, through the shared caches
/// (kept with the update, ``SubscriptionUpdate/event(_:)``, or the ``TransitionEventCache``) where many streams send
/// the same event.
enum StreamEventEncoding {
    /// The `/subscribe/<function>` event of a result: its `id:` and its value (`event: failure` and the error for a
    /// failure).
    static func function(_ update: SubscriptionUpdate) -> [UInt8] {
        ServerSentEvent(
            event: update.isFailure ? ServerSentEvent.Name.failure : nil, id: update.current.id, data: update.body
        ).encoded()
    }

    /// The `event: patch` of a `/subscribe/<function>` stream: the change to the value of id `id` as a JSON Patch.
    static func patch(_ patch: ValuePatch, id: String) -> [UInt8] {
        ServerSentEvent(
            event: ServerSentEvent.Name.patch, id: id, data: [UInt8(ascii: "{")] + patch.fields + [UInt8(ascii: "}")]
        ).encoded()
    }

    /// The `event: patch` of `update`'s ``SubscriptionUpdate/patch`` (its value's event, should it have none).
    static func patch(of update: SubscriptionUpdate) -> [UInt8] {
        guard let patch = update.patch else { return function(update) }
        return self.patch(patch, id: update.current.id)
    }

    /// The `event: fatal` that ends a stream whose credentials were refused; `body` is the error, `{"error":{…}}`.
    static func fatal(_ body: [UInt8]) -> [UInt8] {
        ServerSentEvent(event: ServerSentEvent.Name.fatal, data: body).encoded()
    }

    /// The `event: transition` of a multi-subscription stream with subscription `ids`, written in one buffer: the
    /// snapshot's timestamp and each change (`patches`: per change, the patch to send instead of its value; empty for
    /// none), with `resume`, what the client holds once it has the event, as its `id:`.
    static func transition(
        ids: [String], ts: ConvexTimestamp, resume: ResumeID, changes: [StreamTransition.MemberUpdate],
        patches: [ValuePatch?] = []
    ) -> [UInt8] {
        func patch(_ index: Int) -> ValuePatch? { patches.isEmpty ? nil : patches[index] }
        var size = 64 + resume.held.count * 17
        for (index, change) in changes.enumerated() {
            size += (patch(index)?.fields.count ?? change.update.body.count) + 48
        }
        return ServerSentEvent.encoded(event: ServerSentEvent.Name.transition, capacity: size) { id in
            resume.append(to: &id)
        } data: { data in
            data += #"{"ts":""#.utf8
            data.appendDecimal(ts.nanoseconds)
            data += #"","changes":["#.utf8
            for (index, change) in changes.enumerated() {
                if index > 0 { data.append(UInt8(ascii: ",")) }
                append(change, id: ids[change.member], patch: patch(index), to: &data)
            }
            data += "]}".utf8
        }
    }

    /// Appends one change of a transition to `data`: the subscription's result in full, its error, or with `patch`
    /// its change as a JSON Patch.
    private static func append(
        _ change: StreamTransition.MemberUpdate, id: String, patch: ValuePatch?, to data: inout [UInt8]
    ) {
        let sent = change.update
        data += #"{"sub":""#.utf8
        data += id.utf8  // ids are [A-Za-z0-9_-]: no escaping needed
        if let patch {
            data += #"","#.utf8
            data += patch.fields
            data += "}".utf8
        } else if sent.isFailure {
            data += #"","#.utf8
            data += sent.body.dropFirst()  // {"error":{…}} becomes {"sub":"…","error":{…}}
        } else {
            data += #"","value":"#.utf8
            data += sent.body
            data += #","v":""#.utf8
            sent.hash.append(to: &data)
            data += #""}"#.utf8
        }
    }
}
