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
}
