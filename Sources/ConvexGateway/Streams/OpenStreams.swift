import Synchronization

/// The event streams open now, single- and multi-subscription alike: they get the heartbeat and are counted in the
/// open-streams metric. Every stream is first admitted under the stream limit (Pipeline/StreamAdmission.swift); its place is
/// given back when it closes, or when it never opens.
final class OpenStreams: Sendable {
    private let outputs = Mutex<[ObjectIdentifier: (output: any EventStreamOutput, client: ClientKey)]>([:])
    /// Streams admitted and not over: the open ones and those still waiting for their first results.
    private let admitted = Atomic<Int>(0)
    /// The streams each client holds, against its share (`--max-streams-per-client`).
    private let shares: ClientShares
    private let metrics: GatewayMetrics

    init(metrics: GatewayMetrics, perClient: Int = .max) {
        self.metrics = metrics
        shares = ClientShares(limit: perClient)
    }

    /// Why a new stream is refused.
    enum Refusal: Error {
        /// `limit` streams are admitted already.
        case gateway
        /// The client holds its share.
        case client(limit: Int)
    }

    /// Takes a place for a new stream of `client`, under `limit` for all (asked first: when every place is taken,
    /// that is the answer) and the share of each client.
    func admit(limit: Int, client: ClientKey) -> Refusal? {
        guard admitted.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            admitted.wrappingSubtract(1, ordering: .relaxed)
            return .gateway
        }
        guard shares.take(client) else {
            admitted.wrappingSubtract(1, ordering: .relaxed)
            return .client(limit: shares.limit)
        }
        return nil
    }

    /// Gives back the place of an admitted stream of `client` that did not open.
    func withdraw(_ client: ClientKey) {
        admitted.wrappingSubtract(1, ordering: .relaxed)
        shares.release(client)
    }

    /// The streams `client` holds (admitted and not over).
    func held(by client: ClientKey) -> Int { shares.count(client) }

    /// Streams admitted and not over.
    var admittedCount: Int { admitted.load(ordering: .relaxed) }

    /// An admitted stream of `client` opened on `output`; its place is given back when it closes.
    func opened(_ output: any EventStreamOutput, client: ClientKey) {
        let added = outputs.withLock { $0.updateValue((output, client), forKey: ObjectIdentifier(output)) == nil }
        if added { metrics.streamOpened() }
    }

    func closed(_ output: any EventStreamOutput) {
        if let removed = outputs.withLock({ $0.removeValue(forKey: ObjectIdentifier(output)) }) {
            metrics.streamClosed()
            withdraw(removed.client)
        }
    }

    var count: Int { outputs.withLock { $0.count } }

    /// Sends a heartbeat comment to every stream that is not behind.
    func heartbeat() {
        let beat = ServerSentEvent.comment("hb")
        for (output, _) in outputs.withLock({ Array($0.values) }) {
            output.heartbeat(beat)
        }
    }
}
