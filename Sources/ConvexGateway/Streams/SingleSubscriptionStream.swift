import Synchronization

/// A `/subscribe/<function>` stream: one subscription, whose events are sent as the hub rendered them. A reader
/// that keeps up gets every event; once more than ``limit`` bytes wait, a new value replaces what is queued (a
/// query result is state, so only the latest matters).
///
/// With `delta=json-patch` (``ValueDelta``), a change whose patch the hub made is sent as that patch when the
/// reader holds the patch's base: the last result this stream sent, or the one its `Last-Event-ID` names.
final class SingleSubscriptionStream: EventSink {
    let output: any EventStreamOutput
    let format: OutputFormat
    let limit: Int
    let wantsPatches: Bool
    /// The hash of the result the reader holds (or will, once what is queued is sent).
    private let held: Mutex<UInt64?>

    /// - Parameter resumeHash: the hash of the result the client's `Last-Event-ID` says it holds.
    init(
        output: any EventStreamOutput, format: OutputFormat, limit: Int, patches: Bool = false,
        resumeHash: UInt64? = nil
    ) {
        self.output = output
        self.format = format
        self.limit = limit
        self.wantsPatches = patches
        self.held = Mutex(resumeHash)
    }

    func deliver(_ update: SubscriptionUpdate) {
        guard wantsPatches else {
            // Full values only: nothing to remember, no lock on the fan-out path.
            if output.pendingByteCount < limit {
                output.write(update.event)
            } else {
                output.replacePending(with: update.event)
            }
            return
        }
        held.withLock { held in
            if output.pendingByteCount >= limit {
                // What is queued is dropped, the base of a patch among it: a full value replaces it.
                output.replacePending(with: update.event)
            } else if let patch = update.patch, patch.base == held {
                output.write(patch.event)
            } else {
                output.write(update.event)
            }
            held = update.hash
        }
    }

    func finish() { output.finish() }
}
