import Synchronization

/// A subscription's new current result, rendered once in one output mode and shared by every sink in that mode. The
/// hub renders values; the streams frame them (``StreamWire``), and the framed event is kept here, made by the first
/// stream that sends it and written as the same bytes by every other.
///
/// Its parts live in one object, so a stream's copy of an update is one reference: a change that reaches thousands of
/// streams is copied once per stream.
package struct SubscriptionUpdate: Sendable {
    private final class Parts: Sendable {
        let current: CurrentResult
        let body: [UInt8]
        let patch: ValuePatch?
        /// The `/subscribe/<function>` event of the value, once a stream framed it.
        let event = Mutex<[UInt8]?>(nil)
        /// The `event: patch` of the patch, once a stream framed it.
        let patchEvent = Mutex<[UInt8]?>(nil)

        init(current: CurrentResult, body: [UInt8], patch: ValuePatch?) {
            self.current = current
            self.body = body
            self.patch = patch
        }
    }

    private var parts: Parts

    package var current: CurrentResult { parts.current }
    /// Identifies the result (equal results, equal hashes): what `Last-Event-ID` resumption compares.
    package var hash: ContentHash { parts.current.hash }
    /// The value's JSON, or for a failure the error body `{"error": {...}}`.
    package var body: [UInt8] { parts.body }
    /// The change from the previous value as a JSON Patch, when a sink asked for patches, the previous result was
    /// a value too, and the patch is smaller than half the value (``ValueDelta``); made once per change and mode.
    /// Setting it makes a new update (whose events are framed anew: at most twice per result and mode, where streams of
    /// values and of patches read the same result).
    package var patch: ValuePatch? {
        get { parts.patch }
        set { parts = Parts(current: parts.current, body: parts.body, patch: newValue) }
    }

    package init(current: CurrentResult, body: [UInt8], patch: ValuePatch? = nil) {
        parts = Parts(current: current, body: body, patch: patch)
    }

    package var isFailure: Bool {
        if case .failure = current.result { true } else { false }
    }

    /// A failure of the whole stream: the caller's credentials were refused, for every subscription.
    package var endsStream: Bool {
        if case .failure(.unauthenticated) = current.result { true } else { false }
    }

    /// The update's `/subscribe/<function>` event: made by `frame` the first time, then the same bytes.
    func event(_ frame: () -> [UInt8]) -> [UInt8] {
        Self.made(parts.event, by: frame)
    }

    /// The `event: patch` of its ``patch``: made by `frame` the first time, then the same bytes.
    func patchEvent(_ frame: () -> [UInt8]) -> [UInt8] {
        Self.made(parts.patchEvent, by: frame)
    }

    private static func made(_ slot: borrowing Mutex<[UInt8]?>, by frame: () -> [UInt8]) -> [UInt8] {
        slot.withLock { made in
            if let made { return made }
            let bytes = frame()
            made = bytes
            return bytes
        }
    }
}
