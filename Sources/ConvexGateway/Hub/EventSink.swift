/// What the subscription hub delivers to: one subscription of one event stream. A single-subscription stream is
/// one sink; a multi-subscription stream has one sink per subscription. Implementations never block.
package protocol EventSink: AnyObject, Sendable {
    /// The output mode this stream renders values in.
    var format: OutputFormat { get }
    /// Whether the stream sends changes as JSON Patches (`delta=json-patch`): then updates carry one when the
    /// hub can make it.
    var wantsPatches: Bool { get }
    /// A new current result of the subscription the sink is attached to.
    func deliver(_ update: SubscriptionUpdate)
    /// The subscription ended (its upstream connection closed, or the gateway is shutting down): the stream ends
    /// cleanly and the client's `EventSource` reconnects.
    func finish()
}

extension EventSink {
    package var wantsPatches: Bool { false }
}

/// A subscription's new current result, rendered once in one output mode and shared by every sink in that mode.
package struct SubscriptionUpdate: Sendable {
    package var snapshot: SubscriptionHub.Snapshot
    /// Identifies the result (equal results, equal hashes): what `Last-Event-ID` resumption compares.
    package var hash: UInt64
    /// The value's JSON, or for a failure the error body `{"error": {...}}`.
    package var body: [UInt8]
    /// The whole single-subscription event (`id:` and `data:` lines, `event: error` for a failure).
    package var event: [UInt8]
    /// The change from the previous value as a JSON Patch, when a sink asked for patches, the previous result was
    /// a value too, and the patch is smaller than half the value (``ValueDelta``); made once per change and mode.
    package var patch: ValueDelta.Patch?

    package var isFailure: Bool {
        if case .failure = snapshot.result { true } else { false }
    }
}
