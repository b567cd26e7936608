import ConvexSyncProtocol

/// The changes of one upstream transition to one stream's subscriptions, rendered.
package struct StreamTransition: Sendable {
    package struct MemberUpdate: Sendable {
        /// The subscription's index in its stream.
        package var member: Int
        package var update: SubscriptionUpdate
    }

    /// The Convex timestamp of the snapshot the results come from.
    package var ts: ConvexTimestamp
    /// In the order of the stream's members.
    package var changes: [MemberUpdate]
    /// Where the streams that share this transition find the event another of them made, when the hub shares it
    /// (``TransitionEventCache``).
    package var shared: TransitionEventCache? = nil
    /// The stream's start: the current results it attached with (every one its client does not hold, at the snapshot
    /// of its attach), which a stream of several subscriptions gets first, even when it holds nothing. The hub makes
    /// it under its lock but delivers it after leaving the lock, as it does each transition, so a transition made
    /// after it can reach the stream before it; such a stream keeps what comes before its start (``StreamWire``).
    package var isFirst = false
}
