import ConvexValues

/// What the subscription hub delivers to: one event stream, of one or many subscriptions (its members, numbered in
/// the order they attached). Implementations never block.
package protocol EventSink: AnyObject, Sendable {
    /// The output mode this stream renders values in.
    var format: OutputFormat { get }
    /// Whether the stream sends changes as JSON Patches (`delta=json-patch`): then updates carry one when the
    /// hub can make it.
    var wantsPatches: Bool { get }
    /// The changes one upstream transition made to the stream's subscriptions (or, first, the current result of
    /// each), all at once.
    func deliver(_ transition: StreamTransition)
    /// A subscription ended (its upstream connection closed, or the gateway is shutting down): the stream ends
    /// cleanly and the client's `EventSource` reconnects.
    func end()
}

extension EventSink {
    package var wantsPatches: Bool { false }
}

/// The changes of one upstream transition to one stream's subscriptions, rendered.
package struct StreamTransition: Sendable {
    package struct Change: Sendable {
        /// The subscription's index in its stream.
        package var member: Int
        package var update: SubscriptionUpdate
    }

    /// The Convex timestamp (nanoseconds) of the snapshot the results come from.
    package var ts: UInt64
    /// In the order of the stream's members.
    package var changes: [Change]
    /// Where the streams that share this transition find the event another of them made, when the hub shares it
    /// (``SharedTransitionEvents``).
    package var shared: SharedTransitionEvents? = nil
}

/// A subscription's new current result, rendered once in one output mode and shared by every sink in that mode. The
/// hub renders values; the streams frame them (``StreamWire``).
///
/// Its parts live in one object, so a stream's copy of an update is one reference: a change that reaches thousands of
/// streams is copied once per stream.
package struct SubscriptionUpdate: Sendable {
    private final class Parts: Sendable {
        let current: SubscriptionHub.CurrentResult
        let body: [UInt8]
        let frame: FramedOnce
        let patch: ValueDelta.Patch?

        init(current: SubscriptionHub.CurrentResult, body: [UInt8], frame: FramedOnce, patch: ValueDelta.Patch?) {
            self.current = current
            self.body = body
            self.frame = frame
            self.patch = patch
        }
    }

    private var parts: Parts

    package var current: SubscriptionHub.CurrentResult { parts.current }
    /// Identifies the result (equal results, equal hashes): what `Last-Event-ID` resumption compares.
    package var hash: UInt64 { parts.current.hash }
    /// The value's JSON, or for a failure the error body `{"error": {...}}`.
    package var body: [UInt8] { parts.body }
    /// Where the update's `/subscribe/<function>` event is kept once a stream framed it, for every other stream.
    package var frame: FramedOnce { parts.frame }
    /// The change from the previous value as a JSON Patch, when a sink asked for patches, the previous result was
    /// a value too, and the patch is smaller than half the value (``ValueDelta``); made once per change and mode.
    package var patch: ValueDelta.Patch? {
        get { parts.patch }
        set { parts = Parts(current: parts.current, body: parts.body, frame: parts.frame, patch: newValue) }
    }

    package init(
        current: SubscriptionHub.CurrentResult, body: [UInt8], frame: FramedOnce = FramedOnce(),
        patch: ValueDelta.Patch? = nil
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
