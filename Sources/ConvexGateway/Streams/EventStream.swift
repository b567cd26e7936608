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
/// A reader that keeps up gets every event; once more than `limit` bytes wait, what is queued is replaced by the
/// latest result of every subscription, in full (a query result is state, so only the latest matters).
///
/// The wire itself (what the client holds, which event each delivery sends) is ``StreamWire``, a state machine with no
/// I/O; this class holds it under a lock, tells it how far behind the client is, and performs its writes after leaving
/// the lock, in the order they were made. It alone makes the events' bytes (``bytes(of:)``): through the caches that
/// the streams of one subscription or one transition share, so each shared event is made once.
final class EventStream: EventSink {
    enum Framing: Sendable {
        /// `/subscribe/<function>`: one subscription, its own events.
        case function
        /// `/subscribe?sub.<id>=…`: transition events naming each subscription by its id.
        case transitions(ids: [String])
    }

    private struct Locked {
        var wire: StreamWire
        /// Writes made while another thread performs earlier ones: that thread performs these next, in order.
        var queued: [StreamWire.Write] = []
        var writing = false
    }

    let format: OutputFormat
    let output: any EventStreamOutput
    let wantsPatches: Bool
    /// Per subscription, the hash of the result the client holds when it connects (its `Last-Event-ID`).
    let held: [ContentHash?]
    private let state: Mutex<Locked>

    /// - Parameters:
    ///   - count: the number of subscriptions (1 for `.function`).
    ///   - resumeFrom: the `Last-Event-ID` the client sent, if any.
    init(
        framing: Framing, count: Int, format: OutputFormat, output: any EventStreamOutput, limit: Int,
        patches: Bool = false, resumeFrom: String?
    ) {
        self.format = format
        self.output = output
        self.wantsPatches = patches
        let wire = StreamWire(framing: framing, count: count, limit: limit, patches: patches, resumeFrom: resumeFrom)
        self.held = wire.resume.held
        state = Mutex(Locked(wire: wire))
    }

    func deliver(_ transition: StreamTransition) {
        // The wire is called right here, under the lock, not through a closure handed to `perform`: a closure holding
        // the transition would copy it, and with it count up and down the references of what every stream of a fan-out
        // shares (its changes, its event cache), from every thread at once.
        perform(
            state.withLock { locked in
                let pendingBytes = locked.wire.readsPendingBytes ? output.pendingByteCount : 0
                return Self.claim(locked.wire.deliver(transition, pendingBytes: pendingBytes), &locked)
            })
    }

    /// Ends the stream (a subscription's upstream ended, or the gateway is shutting down); the client reconnects.
    func end() {
        perform(state.withLock { locked in Self.claim(locked.wire.end(), &locked) })
    }

    /// Under the lock, the wire's new writes: the ones this thread performs, or none when another thread is performing
    /// earlier ones (then they are queued for that thread, which performs them next, in order).
    private static func claim(_ made: consuming StreamWire.Writes, _ locked: inout Locked) -> StreamWire.Writes {
        var writes = made
        if locked.writing {
            while let write = writes.takeFirst() { locked.queued.append(write) }
            return StreamWire.Writes()
        }
        locked.writing = !writes.isEmpty
        return writes
    }

    /// Performs `writes` after leaving the lock, in the order they were made, then whatever other threads queued
    /// meanwhile. Each write is moved out of its ``StreamWire/Writes`` (``StreamWire/Writes/takeFirst()``), not copied.
    private func perform(_ claimed: consuming StreamWire.Writes) {
        var writes = claimed
        while !writes.isEmpty {
            while let write = writes.takeFirst() {
                switch write {
                case .write(let event): output.write(Self.bytes(of: event))
                case .writeCoalescing(let event, let limit): output.write(Self.bytes(of: event), coalescingAt: limit)
                case .replacePending(let event): output.replacePending(with: Self.bytes(of: event))
                case .end: output.end()
                }
            }
            // Let go of the events before the lock: a shared transition's copy of what the client holds, alive while
            // the wire takes its next delivery, would make the wire copy its array.
            writes = StreamWire.Writes()
            writes = state.withLock { locked in
                guard !locked.queued.isEmpty else {
                    locked.writing = false
                    return StreamWire.Writes()
                }
                defer { locked.queued = [] }
                return StreamWire.Writes(locked.queued)
            }
        }
    }

    /// The bytes of an event: made once and shared where many streams send it (kept with the update, or in the
    /// ``TransitionEventCache``), by ``StreamEventEncoding``.
    static func bytes(of event: StreamWire.Event) -> [UInt8] {
        switch event {
        case .bytes(let bytes):
            bytes
        case .function(let update):
            update.event { StreamEventEncoding.function(update) }
        case .patch(let update):
            update.patchEvent { StreamEventEncoding.patch(of: update) }
        case .sharedTransition(let shared):
            shared.cache.bytes(ids: shared.ids, idsHash: shared.idsHash, resume: shared.resume) {
                StreamEventEncoding.transition(
                    ids: shared.ids, ts: shared.ts, resume: shared.resume, changes: shared.changes)
            }
        }
    }
}
