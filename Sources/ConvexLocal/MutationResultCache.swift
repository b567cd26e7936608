import ConvexSyncProtocol
import Synchronization
import TimeSource

/// The deployment's record of its sync sessions' mutation results (``MutationResults``, which says what a resend gets
/// and how the bytes are bounded), under a lock, on the deployment's clock.
final class MutationResultCache: Sendable {
    private let results: Mutex<MutationResults>
    /// Held across a mutation's lookup, run and store: a mutation resent on a new socket while its first run is under
    /// way on the old one waits for that run and gets its result. (Mutations commit one at a time anyway, under the
    /// document store's writer lock, so this costs no concurrency.)
    private let serial = Mutex(())
    private let clock: ElapsedClock

    init(limits: MutationResults.Limits = MutationResults.Limits(), clock: ElapsedClock) {
        self.results = Mutex(MutationResults(limits: limits))
        self.clock = clock
    }

    /// `run`'s response, unless this session, as this caller, already ran `request` (the same request id, function
    /// and arguments) successfully: then the response it got then.
    func runOnce(
        sessionId: String, caller: CallerIdentity, request: ClientMessage.FunctionRequest,
        _ run: () -> ServerMessage.MutationResponse
    ) -> ServerMessage.MutationResponse {
        let holder = MutationResults.Holder(sessionId: sessionId, caller: InertIdentity(caller))
        let call = MutationResults.Call(request)
        return serial.withLock { _ in
            if let recorded = results.withLock({ $0.lookup(holder, requestId: request.requestId, call: call) }) {
                return recorded
            }
            let response = run()
            if let record = MutationResults.Record(response) {
                let now = clock.now
                _ = results.withLock {
                    $0.store(holder, requestId: request.requestId, call: call, record: record, now: now)
                }
            }
            return response
        }
    }

    /// The bytes of every recorded result.
    var bytes: Int { results.withLock { $0.bytes } }
}
