import ConvexValues
import Synchronization

/// One event stream of one or many subscriptions: `/subscribe/<function>` (one member, its documented events) and
/// `/subscribe?sub.<id>=…` (many, every event a transition). The hub delivers the changes of one upstream transition
/// at once, and they go out as one event, so a client never holds a mix of two snapshots of the database:
///
/// - `event: transition`, `id:` a ``ResumeID``, `data: {"ts":"<Convex timestamp>","changes":[…]}`, where a change is
///   `{"sub":"<id>","value":<value>,"v":"<hash>"}`, `{"sub":"<id>","base":"<hash>","v":"<hash>","ops":[…]}` (a JSON
///   Patch, with `delta=json-patch`) or `{"sub":"<id>","error":{…}}` (the stream stays open);
/// - a failure of the whole stream (the caller's credentials were refused): `event: fatal` with `{"error": {...}}`
///   and no `sub`, then the stream ends.
///
/// A `/subscribe/<function>` stream sends each result as the hub rendered it (a `data:` event whose `id:` is the
/// result's, `event: failure` for a failure) or its `event: patch`; a stream that fails as a whole ends with
/// `event: fatal`.
///
/// A reader that keeps up gets every event; once more than ``limit`` bytes wait, what is queued is replaced by the
/// latest result of every subscription, in full (a query result is state, so only the latest matters).
final class EventStream: EventSink {
    enum Framing: Sendable {
        /// `/subscribe/<function>`: one subscription, its own events.
        case function
        /// `/subscribe?sub.<id>=…`: transition events naming each subscription by its id.
        case transitions(ids: [String])
    }

    /// A subscription's current result as this connection sent (or queued) it.
    private struct Sent {
        var isFailure: Bool
        var body: [UInt8]
        /// The result's whole `/subscribe/<function>` event.
        var event: [UInt8]
    }

    private struct State {
        /// What the client holds of each subscription: the next event's id, and the base a patch must apply to.
        var resume: ResumeID
        /// The results this connection sent or queued, by subscription (`nil` until the first).
        var sent: [Sent?]
        /// The sequence of each subscription's result last sent (0: none).
        var sequences: [UInt64]
        var ts: UInt64 = 0
        var ended = false
    }

    let framing: Framing
    let format: OutputFormat
    let output: any EventStreamOutput
    let limit: Int
    let wantsPatches: Bool
    /// Per subscription, the hash of the result the client holds when it connects (its `Last-Event-ID`).
    let held: [UInt64?]
    private let state: Mutex<State>

    /// - Parameters:
    ///   - count: the number of subscriptions (1 for `.function`).
    ///   - resumeFrom: the `Last-Event-ID` the client sent, if any.
    init(
        framing: Framing, count: Int, format: OutputFormat, output: any EventStreamOutput, limit: Int,
        patches: Bool = false, resumeFrom: String?
    ) {
        self.framing = framing
        self.format = format
        self.output = output
        self.limit = limit
        self.wantsPatches = patches
        let resume =
            resumeFrom.flatMap { ResumeID(parsing: $0, count: count) }
            ?? ResumeID(version: 0, held: Array(repeating: nil, count: count))
        self.held = resume.held
        state = Mutex(
            State(
                resume: resume, sent: Array(repeating: nil, count: count), sequences: Array(repeating: 0, count: count))
        )
    }

    func deliver(_ transition: StreamTransition) {
        state.withLock { state in
            guard !state.ended else { return }
            // A stream's first delivery is rendered outside the hub's lock, so a transition right after it may
            // arrive first: a result older than the one sent is dropped, never sent after it. (A transition whose
            // changes are all newer, the usual case, is used as it is: no copy per stream.)
            let isNewer = { (change: StreamTransition.Change) in
                change.update.current.sequence > state.sequences[change.member]
            }
            let changes =
                transition.changes.allSatisfy(isNewer) ? transition.changes : transition.changes.filter(isNewer)
            guard !changes.isEmpty else { return }
            for change in changes { state.sequences[change.member] = change.update.current.sequence }
            if case .function = framing, !wantsPatches, let update = changes.last?.update, !update.endsStream {
                // Full values of one subscription: the hub's shared event as it is.
                output.write(update.event, coalescingAt: limit)
                return
            }
            if let refused = changes.first(where: { $0.update.endsStream }) {
                // The credentials are gone for every subscription: one error for the stream, then its end.
                state.ended = true
                output.write(ServerSentEvent(event: ServerSentEvent.Name.fatal, data: refused.update.body).encoded())
                output.end()
                return
            }
            state.ts = transition.ts
            var parts: [[UInt8]] = []
            for change in changes {
                let update = change.update
                let base = state.resume.held[change.member]
                state.resume.held[change.member] = update.hash
                state.resume.version = max(state.resume.version, update.current.sequence)
                state.sent[change.member] = Sent(isFailure: update.isFailure, body: update.body, event: update.event)
                if wantsPatches, let patch = update.patch, patch.base == base {
                    parts.append(part(patch, member: change.member))
                } else {
                    parts.append(part(state.sent[change.member]!, hash: update.hash, member: change.member))
                }
            }
            if output.pendingByteCount >= limit {
                // What is queued is dropped, patch bases among it: every subscription's latest, in full, replaces it.
                var everything: [[UInt8]] = []
                for (member, sent) in state.sent.enumerated() {
                    if let sent, let hash = state.resume.held[member] {
                        everything.append(part(sent, hash: hash, member: member))
                    }
                }
                output.replacePending(with: event(everything, state))
            } else {
                output.write(event(parts, state))
            }
        }
    }

    /// Ends the stream (a subscription's upstream ended, or the gateway is shutting down); the client reconnects.
    func end() {
        let first = state.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
        if first { output.end() }
    }

    // MARK: Framing

    /// One subscription's full result: the whole event of a `/subscribe/<function>` stream, a transition's change
    /// otherwise.
    private func part(_ sent: Sent, hash: UInt64, member: Int) -> [UInt8] {
        guard case .transitions(let ids) = framing else { return sent.event }
        var data: [UInt8] = []
        data.reserveCapacity(sent.body.count + ids[member].utf8.count + 48)
        data += #"{"sub":""#.utf8
        data += ids[member].utf8  // ids are [A-Za-z0-9_-]: no escaping needed
        if sent.isFailure {
            data += #"","#.utf8
            data += sent.body.dropFirst()  // {"error":{…}} becomes {"sub":"…","error":{…}}
        } else {
            data += #"","value":"#.utf8
            data += sent.body
            data += #","v":""#.utf8
            data += ContentHash.text(hash).utf8
            data += #""}"#.utf8
        }
        return data
    }

    /// One subscription's change as a JSON Patch: the patch's `event: patch`, or a transition's change.
    private func part(_ patch: ValueDelta.Patch, member: Int) -> [UInt8] {
        guard case .transitions(let ids) = framing else { return patch.event }
        var data: [UInt8] = []
        data.reserveCapacity(patch.fields.count + ids[member].utf8.count + 12)
        data += #"{"sub":""#.utf8
        data += ids[member].utf8
        data += #"","#.utf8
        data += patch.fields
        data += "}".utf8
        return data
    }

    /// The bytes of one transition: the `/subscribe/<function>` events as they are, or one `event: transition`.
    private func event(_ parts: [[UInt8]], _ state: State) -> [UInt8] {
        guard case .transitions = framing else { return parts.flatMap { $0 } }
        var data: [UInt8] = []
        data.reserveCapacity(parts.reduce(32) { $0 + $1.count + 1 })
        data += #"{"ts":""#.utf8
        data += String(state.ts).utf8
        data += #"","changes":["#.utf8
        for (index, part) in parts.enumerated() {
            if index > 0 { data.append(UInt8(ascii: ",")) }
            data += part
        }
        data += "]}".utf8
        return ServerSentEvent(event: ServerSentEvent.Name.transition, id: state.resume.text, data: data).encoded()
    }
}
