import ConvexSyncProtocol
import ConvexValues

/// The wire of one event stream, as a state machine with no I/O that touches no shared state: what the client holds of
/// each subscription, and which events each delivery sends. A transition and how many bytes wait for the client in,
/// the writes out (``Write``), each naming its ``Event``; ``EventStream`` performs them, in order, after leaving its
/// lock, and makes each event's bytes (``StreamEventEncoding``, through the caches the streams share). The formats are
/// EventStream's (see there): one `event: transition` per delivery on a multi-subscription stream, the hub's shared
/// events (or `event: patch`) on a `/subscribe/<function>` stream, one `event: fatal` before the end when the
/// credentials are refused.
struct StreamWire {
    /// An event a write sends.
    enum Event {
        /// Bytes the wire made (``StreamEventEncoding``): a transition event of this stream's own, the fatal event.
        case bytes([UInt8])
        /// The update's `/subscribe/<function>` event, made once for every stream that sends it (kept with the
        /// update: ``SubscriptionUpdate/event(_:)``).
        case function(SubscriptionUpdate)
        /// The update's ``SubscriptionUpdate/patch`` as an `event: patch` on a `/subscribe/<function>` stream, made
        /// once for every stream that sends it (``SubscriptionUpdate/patchEvent(_:)``).
        case patch(SubscriptionUpdate)
        /// A transition event that every stream with the same ids holding the same once it has it sends, made once.
        case sharedTransition(SharedTransition)
    }

    /// A transition event that streams share (``TransitionEventCache``), with what makes it when none has yet.
    struct SharedTransition {
        let cache: TransitionEventCache
        let ids: [String]
        /// The hash of `ids`, made once per stream.
        let idsHash: Int
        /// What the stream holds once it has the event: the event's `id:` and the cache's key.
        let resume: ResumeID
        let ts: ConvexTimestamp
        let changes: [StreamTransition.MemberUpdate]
    }

    /// One step for the stream's output.
    enum Write {
        /// Queue the event.
        case write(Event)
        /// Queue the event, or replace what is queued with it when at least `limit` bytes wait: one step.
        case writeCoalescing(Event, limit: Int)
        /// Replace what is queued (coalescing a reader that fell behind).
        case replacePending(Event)
        /// End the stream after what is queued.
        case end
    }

    /// The writes of one step, in order. Nearly every step makes one, which is held without an array: a change that
    /// reaches 10,000 streams makes no allocation per stream for its steps. ``EventStream`` takes them out one by one
    /// (``takeFirst()``), moving each write rather than copying it: a copy would count the references of what its event
    /// holds (an update every stream of a fan-out shares) up and down again on every stream.
    struct Writes: RandomAccessCollection, ExpressibleByArrayLiteral {
        private var first: Write?
        private var rest: [Write] = []

        /// No write.
        init() {}

        init(_ write: Write) {
            first = write
        }

        init(_ writes: [Write]) {
            first = writes.first
            if writes.count > 1 { rest = Array(writes[1...]) }
        }

        init(arrayLiteral writes: Write...) {
            self.init(writes)
        }

        var startIndex: Int { 0 }
        var endIndex: Int { (first == nil ? 0 : 1) + rest.count }
        subscript(index: Int) -> Write {
            guard let first else { return rest[index] }
            return index == 0 ? first : rest[index - 1]
        }

        /// Takes the first write out (moved, not copied); `nil` when none is left.
        mutating func takeFirst() -> Write? {
            if let write = first.take() { return write }
            return rest.isEmpty ? nil : rest.removeFirst()
        }
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
    /// The version of the result this connection sent or queued last, by subscription (zero until the first): what a
    /// later result must be newer than.
    private var sentVersions: [ResultVersion]
    /// The results this connection sent or queued, by subscription (`nil` until the first), for a reader that falls
    /// behind: what replaces the queue (``readsPendingBytes``). A stream of one subscription's full values keeps only
    /// their versions (its output coalesces by itself): holding each update too would count the references of the
    /// update every stream of a fan-out shares up and down once more per stream.
    private var sent: [SubscriptionUpdate?]
    private(set) var ended = false
    /// Whether the stream waits for its start (``StreamTransition/isFirst``), as one of several subscriptions does.
    private var awaitsStart: Bool
    /// What reached the stream before its start, merged: sent with the start, as one event. A transition made after
    /// the start but delivered before it, sent alone, would leave its client with the results of the transition for
    /// some subscriptions and older ones for the others.
    private var beforeStart: StreamTransition?
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
        sentVersions = Array(repeating: .zero, count: count)
        sent = Array(repeating: nil, count: count)
        awaitsStart = count > 1
        if case .transitions(let ids) = framing { idsHash = ids.hashValue } else { idsHash = 0 }
    }

    /// Whether ``deliver(_:pendingBytes:)`` reads its `pendingBytes`: a stream of one subscription's full values
    /// leaves coalescing to its output's one step (``Write/writeCoalescing(_:limit:)``), so only streams of patches or
    /// transitions need to know how far behind their client is.
    var readsPendingBytes: Bool {
        guard !ended else { return false }
        if case .function = framing { return wantsPatches }
        return true
    }

    /// The writes one delivery of the hub makes. `pendingBytes`: how many bytes wait for the client, read only where
    /// ``readsPendingBytes`` says (to choose between queuing an event and replacing the queue).
    mutating func deliver(_ transition: StreamTransition, pendingBytes: Int) -> Writes {
        guard !ended else { return Writes() }
        if awaitsStart {
            guard transition.isFirst else {
                beforeStart = beforeStart.map { Self.merging(transition, into: $0) } ?? transition
                return Writes()
            }
            awaitsStart = false
            if let early = beforeStart.take() {
                return deliver(Self.merging(early, into: transition), pendingBytes: pendingBytes)
            }
        }
        // A stream's first delivery is rendered outside the hub's lock, so a transition right after it may arrive
        // first (a single subscription's stream takes it: it cannot mix two snapshots): a result older than the one
        // sent is dropped, never sent after it. The transition is read in place, not copied, when its changes are all
        // newer (the usual case): a copy per stream would count the references of what every stream of a fan-out
        // shares up and down again.
        guard transition.changes.allSatisfy({ $0.update.current.version > sentVersions[$0.member] }) else {
            var newer = transition
            newer.changes = transition.changes.filter { $0.update.current.version > sentVersions[$0.member] }
            newer.shared = nil  // not the changes the streams that share it send
            return newer.changes.isEmpty ? Writes() : deliver(newer, pendingBytes: pendingBytes)
        }
        let changes = transition.changes
        guard !changes.isEmpty else { return Writes() }
        recordSent(changes)
        if case .function = framing, !wantsPatches, let update = changes.last?.update, !update.endsStream {
            // Full values of one subscription: the event every stream of the subscription shares.
            return Writes(.writeCoalescing(.function(update), limit: limit))
        }
        if let refused = changes.first(where: { $0.update.endsStream }) {
            // The credentials are gone for every subscription: one error for the stream, then its end.
            ended = true
            return [.write(.bytes(StreamEventEncoding.fatal(refused.update.body))), .end]
        }
        let patches = advanceResume(changes)
        guard case .transitions(let ids) = framing else {
            if pendingBytes >= limit, let latest = sent[0] {
                // What is queued is dropped, a patch's base among it: the latest value, in full, replaces it.
                return Writes(.replacePending(.function(latest)))
            }
            return Self.functionWrites(changes, patches: patches)
        }
        return transitionWrites(
            ids: ids, ts: transition.ts, changes, patches: patches, shared: transition.shared,
            pendingBytes: pendingBytes)
    }

    /// Notes `changes` as sent: their versions, and the updates themselves where a reader that falls behind needs them.
    private mutating func recordSent(_ changes: [StreamTransition.MemberUpdate]) {
        let keepsResults = readsPendingBytes
        for index in changes.indices {
            sentVersions[changes[index].member] = changes[index].update.current.version
            if keepsResults { sent[changes[index].member] = changes[index].update }
        }
    }

    /// Moves what the client holds on to `changes`. Returns, for a stream that reads patches, per change the patch to
    /// send instead of its value (one made against what the client held); empty otherwise.
    private mutating func advanceResume(_ changes: [StreamTransition.MemberUpdate]) -> [ValuePatch?] {
        var patches: [ValuePatch?] = []
        if wantsPatches { patches.reserveCapacity(changes.count) }
        for change in changes {
            let update = change.update
            let base = resume.held[change.member]
            resume.held[change.member] = update.hash
            resume.version = max(resume.version, update.current.version)
            if wantsPatches { patches.append(update.patch.flatMap { $0.base == base ? $0 : nil }) }
        }
        return patches
    }

    /// A multi-subscription stream's write for `changes`: every subscription's latest in full when its client fell
    /// behind, else the event streams with the same ids holding the same share (`shared`), else its own.
    private func transitionWrites(
        ids: [String], ts: ConvexTimestamp, _ changes: [StreamTransition.MemberUpdate], patches: [ValuePatch?],
        shared: TransitionEventCache?, pendingBytes: Int
    ) -> Writes {
        if pendingBytes >= limit {
            // What is queued is dropped, patch bases among it: every subscription's latest, in full, replaces it.
            let everything = sent.enumerated().compactMap { member, sent in
                sent.map { StreamTransition.MemberUpdate(member: member, update: $0) }
            }
            let latest = StreamEventEncoding.transition(ids: ids, ts: ts, resume: resume, changes: everything)
            return Writes(.replacePending(.bytes(latest)))
        }
        if let shared, !wantsPatches {
            // Every stream with these ids that holds what this one now holds sends these bytes: made once.
            return Writes(
                .write(
                    .sharedTransition(
                        SharedTransition(
                            cache: shared, ids: ids, idsHash: idsHash, resume: resume, ts: ts, changes: changes))))
        }
        return Writes(
            .write(
                .bytes(
                    StreamEventEncoding.transition(
                        ids: ids, ts: ts, resume: resume, changes: changes, patches: patches))))
    }

    /// One transition of `earlier`'s and `later`'s changes: each member's newest (by version), at the later snapshot,
    /// shared with no other stream.
    private static func merging(_ later: StreamTransition, into earlier: StreamTransition) -> StreamTransition {
        var newest: [Int: StreamTransition.MemberUpdate] = [:]
        for change in earlier.changes + later.changes
        where change.update.current.version >= newest[change.member]?.update.current.version ?? .zero {
            newest[change.member] = change
        }
        return StreamTransition(
            ts: max(earlier.ts, later.ts), changes: newest.values.sorted { $0.member < $1.member })
    }

    /// A `/subscribe/<function>` stream's events for `changes`: per change its patch (`patches`, one per change) or,
    /// where the client holds no base for one, its value. (A function of its own: a local function capturing
    /// ``deliver(_:pendingBytes:)``'s variables would make the debug build box them on every delivery.)
    private static func functionWrites(_ changes: [StreamTransition.MemberUpdate], patches: [ValuePatch?]) -> Writes {
        func write(_ index: Int) -> Write {
            guard !patches.isEmpty, let patch = patches[index] else { return .write(.function(changes[index].update)) }
            // The patch chosen is the update's own (its base is what the client holds).
            assert(changes[index].update.patch?.base == patch.base)
            return .write(.patch(changes[index].update))
        }
        return changes.count == 1 ? Writes(write(0)) : Writes(changes.indices.map(write))
    }

    /// The stream ends (a subscription's upstream ended, or the gateway is shutting down): `[.end]` the first time.
    mutating func end() -> Writes {
        guard !ended else { return Writes() }
        ended = true
        return [.end]
    }
}
