import ConvexValues

/// What the subscription hub delivers to: one event stream, of one or many subscriptions (its members, numbered in
/// the order they attached). Implementations never block.
package protocol EventSink: AnyObject, Sendable {
    /// The output mode this stream renders values in.
    var format: OutputFormat { get }
    /// Whether the stream sends changes as JSON Patches (`delta=json-patch`): then updates carry one when the
    /// hub can make it.
    var wantsPatches: Bool { get }
    /// The changes one upstream transition made to the stream's subscriptions, all at once; or, first, its start
    /// (``StreamTransition/isFirst``): the current result of each that its client does not hold. A stream of several
    /// subscriptions gets its start even when that holds nothing, and a transition may reach it before its start.
    func deliver(_ transition: StreamTransition)
    /// A subscription ended (its upstream connection closed, or the gateway is shutting down): the stream ends
    /// cleanly and the client's `EventSource` reconnects.
    func end()
}

extension EventSink {
    package var wantsPatches: Bool { false }
}
