/// A subscription's current result, with its event id: what the hub holds of each subscription and hands to the
/// streams (inside a ``SubscriptionUpdate``).
package struct CurrentResult: Sendable {
    /// `<version>-<hash in hex>`: the resume id of a one-subscription stream holding this result.
    package var id: String
    /// Grows with every change of the subscription (and with the wall clock, across restarts): the number a stream's
    /// resume id carries (``ResumeID/version``).
    package var version: ResultVersion
    /// Identifies the result: equal results have equal hashes.
    package var hash: ContentHash
    package var result: UpstreamResult
}
