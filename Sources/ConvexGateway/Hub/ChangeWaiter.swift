import ConvexSyncProtocol
import ConvexValues

/// The sink of one long-poll `GET` (``SubscriptionHub/nextChange(of:caller:upstream:format:timeout:)``), of one
/// query or a batch of them: the first update whose hash differs from the one the client holds of that member ends
/// the wait, and so do the timeout, the end of a subscription, and shutdown (with `nil`). It ends once; later calls do
/// nothing.
final class ChangeWaiter: EventSink {
    /// The changed result and the timestamp of the snapshot it comes from.
    typealias Outcome = (update: SubscriptionUpdate, ts: ConvexTimestamp)

    let format: OutputFormat
    /// Per member, the hash of the result the client holds (`nil`: none, so any result is a change).
    private let held: [ContentHash?]

    private let wait = OneShot<Outcome?>()

    init(format: OutputFormat, held: [ContentHash?]) {
        self.format = format
        self.held = held
    }

    func deliver(_ transition: StreamTransition) {
        if let change = transition.changes.first(where: { $0.update.hash != held[$0.member] }) {
            end(with: (change.update, transition.ts))
        }
    }

    func end() { end(with: nil) }

    /// Ends the wait with `update` (`nil`: no change).
    func end(with update: Outcome?) {
        wait.end(with: update)
    }

    /// The changed update, or `nil` when the wait ended without a change.
    func outcome() async -> Outcome? {
        await wait.value()
    }
}
