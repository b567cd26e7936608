@testable import ConvexGateway

extension StreamTransition {
    /// A stream's start that holds nothing, as the hub gives a stream of several subscriptions whose client holds
    /// every current result: before it such a stream sends nothing (``StreamWire``).
    static let emptyStart = StreamTransition(ts: 0, changes: [], isFirst: true)
}

extension EventStream {
    /// The stream once its start (holding nothing) has come, as the hub starts one of several subscriptions.
    func started() -> EventStream {
        deliver(.emptyStart)
        return self
    }
}
