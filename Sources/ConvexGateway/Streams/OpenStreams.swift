import Synchronization

/// The event streams open now, single- and multi-subscription alike: they get the heartbeat and are counted in the
/// open-streams metric. Every stream is first admitted under the stream limit (Pipeline/StreamAdmission.swift); its place is
/// given back when it closes, or when it never opens.
final class OpenStreams: Sendable {
    private let outputs = Mutex<[ObjectIdentifier: any EventStreamOutput]>([:])
    /// Streams admitted and not over: the open ones and those still waiting for their first results.
    private let admitted = Atomic<Int>(0)
    private let metrics: GatewayMetrics

    init(metrics: GatewayMetrics) { self.metrics = metrics }

    /// Takes a place for a new stream; `false` when `limit` streams are admitted already.
    func admit(limit: Int) -> Bool {
        if admitted.wrappingAdd(1, ordering: .relaxed).newValue <= limit { return true }
        admitted.wrappingSubtract(1, ordering: .relaxed)
        return false
    }

    /// Gives back the place of an admitted stream that did not open.
    func withdraw() {
        admitted.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Streams admitted and not over.
    var admittedCount: Int { admitted.load(ordering: .relaxed) }

    func opened(_ output: any EventStreamOutput) {
        let added = outputs.withLock { $0.updateValue(output, forKey: ObjectIdentifier(output)) == nil }
        if added { metrics.streamOpened() }
    }

    func closed(_ output: any EventStreamOutput) {
        let removed = outputs.withLock { $0.removeValue(forKey: ObjectIdentifier(output)) != nil }
        if removed {
            metrics.streamClosed()
            withdraw()
        }
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
