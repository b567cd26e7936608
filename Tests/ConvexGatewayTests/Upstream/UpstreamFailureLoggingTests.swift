import Logging
import Synchronization
import Testing

@testable import ConvexGateway

/// The one conversion of upstream failures to gateway errors, which every route (calls, `GET`s, batches, streams)
/// uses: a failure of no known kind reaches the log with its detail, the client only a generic 500.
@Suite struct UpstreamFailureLoggingTests {
    /// Keeps every message logged through it.
    final class Recorder: Sendable {
        let messages = Mutex<[String]>([])

        struct Handler: LogHandler {
            let recorder: Recorder
            var logLevel: Logger.Level = .trace
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                let details = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
                recorder.messages.withLock { $0.append("\(event.level) \(event.message) \(details)") }
            }
        }

        var logger: Logger { Logger(label: "test") { _ in Handler(recorder: self) } }
    }

    @Test func anUnexpectedFailureIsLoggedWithItsDetailAndAnsweredAsAGeneric500() {
        let recorder = Recorder()
        let error = UpstreamFailure.unexpected("socket state 7").gatewayError(logging: recorder.logger)
        #expect(error.code == .internalError)
        #expect(!error.message.contains("socket state 7"))
        #expect(recorder.messages.withLock { $0 } == ["error unexpected upstream failure error=socket state 7"])
        // Known failures are the client's to read, not the log's.
        _ = UpstreamFailure.functionFailed(message: "boom").gatewayError(logging: recorder.logger)
        #expect(recorder.messages.withLock { $0.count } == 1)
    }

    @Test func anUnreachableDeploymentIsLoggedWithItsDetailAndAnsweredWithoutIt() {
        let recorder = Recorder()
        let detail = "Could not connect to ws://10.1.2.3:3210/api/sync: Connection refused (errno 111)"
        let error = UpstreamFailure.unavailable(detail).gatewayError(logging: recorder.logger)
        #expect(error.code == .upstreamUnavailable)
        #expect(error.status == 503)
        #expect(error.headers.contains { $0.0 == "Retry-After" })
        for part in ["10.1.2.3", "3210", "errno", "refused"] {
            #expect(!error.message.contains(part), "\(error.message)")
        }
        #expect(recorder.messages.withLock { $0 } == ["warning Convex deployment is unreachable error=\(detail)"])
    }

    @Test func aFailureLoggedForATracedRequestNamesItsTraceAndSpan() {
        let recorder = Recorder()
        let trace = RequestTrace(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: nil)
        RequestTrace.$current.withValue(trace) {
            _ = UpstreamFailure.unavailable("refused").gatewayError(logging: recorder.logger)
            _ = UpstreamFailure.unexpected("state 7").gatewayError(logging: recorder.logger)
        }
        let ids = "span_id=\(trace.spanID) trace_id=4bf92f3577b34da6a3ce929d0e0e4736"
        #expect(
            recorder.messages.withLock { $0 } == [
                "warning Convex deployment is unreachable error=refused \(ids)",
                "error unexpected upstream failure error=state 7 \(ids)",
            ])
    }
}
