/// A subscription's new current result, rendered once in one output mode and shared by every sink in that mode. The
/// hub renders values; the streams frame them (``StreamWire``).
///
/// Its parts live in one object, so a stream's copy of an update is one reference: a change that reaches thousands of
/// streams is copied once per stream.
package struct SubscriptionUpdate: Sendable {
    private final class Parts: Sendable {
        let current: CurrentResult
        let body: [UInt8]
        let frame: FramedEventCache
        let patch: ValuePatch?

        init(current: CurrentResult, body: [UInt8], frame: FramedEventCache, patch: ValuePatch?) {
            self.current = current
            self.body = body
            self.frame = frame
            self.patch = patch
        }
    }

    private var parts: Parts

    package var current: CurrentResult { parts.current }
    /// Identifies the result (equal results, equal hashes): what `Last-Event-ID` resumption compares.
    package var hash: ContentHash { parts.current.hash }
    /// The value's JSON, or for a failure the error body `{"error": {...}}`.
    package var body: [UInt8] { parts.body }
    /// Where the update's `/subscribe/<function>` event is kept once a stream framed it, for every other stream.
    package var frame: FramedEventCache { parts.frame }
    /// The change from the previous value as a JSON Patch, when a sink asked for patches, the previous result was
    /// a value too, and the patch is smaller than half the value (``ValueDelta``); made once per change and mode.
    package var patch: ValuePatch? {
        get { parts.patch }
        set { parts = Parts(current: parts.current, body: parts.body, frame: parts.frame, patch: newValue) }
    }

    package init(
        current: CurrentResult, body: [UInt8], frame: FramedEventCache = FramedEventCache(),
        patch: ValuePatch? = nil
    ) {
        parts = Parts(current: current, body: body, frame: frame, patch: patch)
    }

    package var isFailure: Bool {
        if case .failure = current.result { true } else { false }
    }

    /// A failure of the whole stream: the caller's credentials were refused, for every subscription.
    package var endsStream: Bool {
        if case .failure(.unauthenticated) = current.result { true } else { false }
    }
}
