import Synchronization

/// The event streams open now, single- and multi-subscription alike: they get the heartbeat and are counted in the
/// open-streams metric.
final class OpenStreams: Sendable {
    private let outputs = Mutex<[ObjectIdentifier: any EventStreamOutput]>([:])
    private let metrics: GatewayMetrics

    init(metrics: GatewayMetrics) { self.metrics = metrics }

    func opened(_ output: any EventStreamOutput) {
        let added = outputs.withLock { $0.updateValue(output, forKey: ObjectIdentifier(output)) == nil }
        if added { metrics.streamOpened() }
    }

    func closed(_ output: any EventStreamOutput) {
        let removed = outputs.withLock { $0.removeValue(forKey: ObjectIdentifier(output)) != nil }
        if removed { metrics.streamClosed() }
    }

    var count: Int { outputs.withLock { $0.count } }

    /// Sends a heartbeat comment to every stream that is not behind.
    func heartbeat() {
        let beat = ServerSentEvent.comment("hb")
        for output in outputs.withLock({ Array($0.values) }) {
            output.heartbeat(beat)
        }
    }
}
