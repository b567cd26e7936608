import ConvexSyncProtocol
import ConvexValues

/// The wire of one event stream, as a state machine with no I/O: what the client holds of each subscription, and the
/// bytes each delivery becomes. A transition in, the writes out (``Write``); ``EventStream`` performs them, in order,
/// after leaving its lock. The formats are EventStream's (see there): one `event: transition` per delivery on a
/// multi-subscription stream, the hub's shared events (or `event: patch`) on a `/subscribe/<function>` stream, one
/// `event: fatal` before the end when the credentials are refused.
struct StreamWire {
    /// One step for the stream's output.
    enum Write: Equatable {
        /// Queue the bytes.
        case write([UInt8])
        /// Queue the bytes, or replace what is queued with them when at least `limit` bytes wait: one step.
        case writeCoalescing([UInt8], limit: Int)
        /// Replace what is queued (coalescing a reader that fell behind).
        case replacePending([UInt8])
        /// End the stream after what is queued.
        case end
    }

    /// The writes of one step, in order. Nearly every step makes one, which is held without an array: a change that
    /// reaches 10,000 streams makes no allocation per stream for its steps.
    struct Writes: RandomAccessCollection, ExpressibleByArrayLiteral, Equatable {
        private var first: Write?
        private var rest: [Write] = []

        init(_ write: Write) {
            first = write
        }

        init(_ writes: [Write]) {
            first = writes.first
            rest = Array(writes.dropFirst())
        }

        init(arrayLiteral writes: Write...) {
            self.init(writes)
        }

        var startIndex: Int { 0 }
        var endIndex: Int { first == nil ? 0 : 1 + rest.count }
        subscript(index: Int) -> Write { index == 0 ? first! : rest[index - 1] }
    }

    /// What every stream starts with, before its first delivery: the reconnection delay an `EventSource` waits after
    /// losing the stream, and a comment that flushes the headers to the client at once.
    static let preamble = Array("retry: 3000\n: connected\n\n".utf8)

    let framing: EventStream.Framing
    let wantsPatches: Bool
    /// Bytes queued for the client past which what is queued is replaced by every subscription's latest result.
    let limit: Int
    /// What the client holds of each subscription: the next event's id, and the base a patch must apply to.
    private(set) var resume: ResumeID
    /// The results this connection sent or queued, by subscription (`nil` until the first): what a later result must
    /// be newer than (by version).
    private var sent: [SubscriptionUpdate?]
    private var ts: ConvexTimestamp = .zero
    private(set) var ended = false
    /// The hash of the subscription ids of a transitions stream (how ``TransitionEventCache`` finds its event).
    private let idsHash: Int

    /// - Parameters:
    ///   - count: the number of subscriptions (1 for `.function`).
    ///   - resumeFrom: the `Last-Event-ID` the client sent, if any.
    init(framing: EventStream.Framing, count: Int, limit: Int, patches: Bool, resumeFrom: String?) {
        self.framing = framing
        self.limit = limit
        self.wantsPatches = patches
        resume =
            resumeFrom.flatMap { ResumeID(parsing: $0, count: count) }
            ?? ResumeID(version: .zero, held: Array(repeating: nil, count: count))
        sent = Array(repeating: nil, count: count)
        if case .transitions(let ids) = framing { idsHash = ids.hashValue } else { idsHash = 0 }
    }

    /// The writes one delivery of the hub makes. `pendingBytes` reads how many bytes wait for the client (read only
    /// when a multi-subscription transition is framed, to choose between queuing it and coalescing).
    mutating func deliver(_ transition: StreamTransition, pendingBytes: () -> Int) -> Writes {
        guard !ended else { return [] }
        // A stream's first delivery is rendered outside the hub's lock, so a transition right after it may arrive
        // first: a result older than the one sent is dropped, never sent after it. (A transition whose changes are all
        // newer, the usual case, is used as it is: no copy per stream.)
        // (`sent` is read in place, not copied: a copy alive here would make the update below copy the array.)
        var changes = transition.changes
        if !changes.allSatisfy({ $0.update.current.version > sent[$0.member]?.current.version ?? .zero }) {
            changes = changes.filter { $0.update.current.version > sent[$0.member]?.current.version ?? .zero }
        }
        guard !changes.isEmpty else { return [] }
        for change in changes { sent[change.member] = change.update }
        if case .function = framing, !wantsPatches, let update = changes.last?.update, !update.endsStream {
            // Full values of one subscription: the event every stream of the subscription shares.
            return Writes(.writeCoalescing(Self.functionEvent(update), limit: limit))
        }
        if let refused = changes.first(where: { $0.update.endsStream }) {
            // The credentials are gone for every subscription: one error for the stream, then its end.
            ended = true
            return [
                .write(ServerSentEvent(event: ServerSentEvent.Name.fatal, data: refused.update.body).encoded()), .end,
            ]
        }
        ts = transition.ts
        // Per change, the patch to send instead of its value (none when the stream reads values).
        var patches: [ValuePatch?] = []
        if wantsPatches { patches.reserveCapacity(changes.count) }
        for change in changes {
            let update = change.update
            let base = resume.held[change.member]
            resume.held[change.member] = update.hash
            resume.version = max(resume.version, update.current.version)
            if wantsPatches { patches.append(update.patch.flatMap { $0.base == base ? $0 : nil }) }
        }
        if pendingBytes() >= limit {
            // What is queued is dropped, patch bases among it: every subscription's latest, in full, replaces it.
            let everything = sent.enumerated().compactMap { member, sent in
                sent.map { StreamTransition.MemberUpdate(member: member, update: $0) }
            }
            return Writes(.replacePending(event(everything, patches: [])))
        }
        if let shared = transition.shared, !wantsPatches, changes.count == transition.changes.count,
            case .transitions(let ids) = framing
        {
            // Every stream with these ids that holds what this one now holds gets these bytes: made once.
            return Writes(
                .write(shared.bytes(ids: ids, idsHash: idsHash, resume: resume) { event(changes, patches: []) }))
        }
        return Writes(.write(event(changes, patches: patches)))
    }

    /// The stream ends (a subscription's upstream ended, or the gateway is shutting down): `[.end]` the first time.
    mutating func end() -> Writes {
        guard !ended else { return [] }
        ended = true
        return [.end]
    }

    // MARK: Framing

    /// The `/subscribe/<function>` event of a result: its `id:` and its value (`event: failure` and the error for a
    /// failure). Framed once per update and shared by every stream that sends it.
    static func functionEvent(_ update: SubscriptionUpdate) -> [UInt8] {
        update.frame.bytes {
            ServerSentEvent(
                event: update.isFailure ? ServerSentEvent.Name.failure : nil, id: update.current.id, data: update.body
            ).encoded()
        }
    }

    /// Appends what a delivery sends of one subscription, its result in full or with `patch` its change as a JSON
    /// Patch, to `data`: the whole event of a `/subscribe/<function>` stream, a transition's change otherwise.
    private func append(_ change: StreamTransition.MemberUpdate, patch: ValuePatch?, to data: inout [UInt8]) {
        let (sent, member) = (change.update, change.member)
        guard case .transitions(let ids) = framing else {
            guard let patch else {
                data += Self.functionEvent(sent)
                return
            }
            data += patch.frame.bytes {
                ServerSentEvent(
                    event: ServerSentEvent.Name.patch, id: sent.current.id,
                    data: [UInt8(ascii: "{")] + patch.fields + [UInt8(ascii: "}")]
                ).encoded()
            }
            return
        }
        data += #"{"sub":""#.utf8
        data += ids[member].utf8  // ids are [A-Za-z0-9_-]: no escaping needed
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

    /// The bytes of one transition (`patches`: per change, the patch to send instead of its value; empty for none):
    /// the `/subscribe/<function>` events as they are, or one `event: transition` written in one buffer.
    private func event(_ changes: [StreamTransition.MemberUpdate], patches: [ValuePatch?]) -> [UInt8] {
        func patch(_ index: Int) -> ValuePatch? { patches.isEmpty ? nil : patches[index] }
        guard case .transitions = framing else {
            var events: [UInt8] = []
            for (index, change) in changes.enumerated() { append(change, patch: patch(index), to: &events) }
            return events
        }
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
                append(change, patch: patch(index), to: &data)
            }
            data += "]}".utf8
        }
    }
}
