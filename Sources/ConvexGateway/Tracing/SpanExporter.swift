import HTTPFetch
import HTTPFields
import Logging
import Synchronization

/// OTLP/HTTP export of request spans (`--otlp-endpoint`): spans wait in memory, at most ``capacity`` (a span that
/// finds it full is dropped and counted in `convex_gateway_trace_spans_dropped_total`), and a background task
/// (``run()``) posts them as JSON to `<endpoint>/v1/traces` every second, or as soon as ``batchSize`` wait, on the
/// gateway's own HTTP client. Recording a span takes a lock and appends: nothing of the export runs on the request's
/// path. A failed post drops its batch and is logged at `warning` at most once a minute, with how many spans were lost.
package final class SpanExporter: Sendable {
    package static let capacity = 2048
    package static let batchSize = 512
    static let failureLogInterval = Duration.seconds(60)

    /// `<endpoint>/v1/traces`.
    package let tracesURL: String
    private let serviceVersion: String
    private let logger: Logger
    private let metrics: GatewayMetrics
    private let clock: GatewayClock
    private let state = Mutex(State())
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    private struct State {
        var spans: [FinishedSpan] = []
        /// When a failure was last logged, and the spans lost since without a line.
        var lastFailureLog: Duration?
        var unloggedLost = 0
    }

    /// - Parameters:
    ///   - endpoint: The OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`), to which `/v1/traces` is added.
    package init(endpoint: String, serviceVersion: String, logger: Logger, metrics: GatewayMetrics, clock: GatewayClock)
    {
        tracesURL = Self.tracesURL(endpoint)
        self.serviceVersion = serviceVersion
        self.logger = logger
        self.metrics = metrics
        self.clock = clock
        (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The traces URL of an OTLP/HTTP base URL, as the OpenTelemetry exporter specification makes it.
    package static func tracesURL(_ endpoint: String) -> String {
        (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/v1/traces"
    }

    /// Keeps a finished span for the next batch, or drops it when ``capacity`` wait already.
    package func record(_ span: FinishedSpan) {
        let kept: Int? = state.withLock { state in
            guard state.spans.count < Self.capacity else { return nil }
            state.spans.append(span)
            return state.spans.count
        }
        switch kept {
        case nil: metrics.traceSpansDropped(1)
        case Self.batchSize?: wake.yield()
        default: break
        }
    }

    /// Sends what waits every second, or as soon as a batch is full, until cancelled.
    package func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [clock, wake] in
                while (try? await clock.sleep(for: .seconds(1))) != nil { wake.yield() }
            }
            for await _ in wakeUps {
                await flush()
            }
            group.cancelAll()
        }
    }

    /// Sends every span that waits now, in batches of at most ``batchSize``, each post given `timeout`; after a post
    /// that fails, the rest wait for the next flush, so that a collector that is down is asked once a second, not once
    /// per batch.
    package func flush(timeout: Duration = .seconds(10)) async {
        while true {
            let batch: [FinishedSpan] = state.withLock { state in
                let count = min(state.spans.count, Self.batchSize)
                defer { state.spans.removeFirst(count) }
                return Array(state.spans.prefix(count))
            }
            if batch.isEmpty { return }
            let body = OTLPTraceJSON.encode(batch, serviceName: "convex-gateway", version: serviceVersion)
            do {
                let response = try await httpFetch(
                    .POST, tracesURL, headers: [(HeaderName.contentType, "application/json")], body: body,
                    timeout: timeout, maxBodyBytes: 1 << 20)
                if !(200..<300).contains(response.status) {
                    failed(lost: batch.count, cause: "HTTP \(response.status)")
                    return
                }
            } catch {
                failed(lost: batch.count, cause: "\(error)")
                return
            }
        }
    }

    /// A batch the collector did not take: counted as dropped, and logged unless a line was written in the last
    /// minute.
    private func failed(lost: Int, cause: String) {
        metrics.traceSpansDropped(lost)
        let now = clock.now
        let logged: Int? = state.withLock { state in
            state.unloggedLost += lost
            if let last = state.lastFailureLog, now - last < Self.failureLogInterval { return nil }
            state.lastFailureLog = now
            defer { state.unloggedLost = 0 }
            return state.unloggedLost
        }
        guard let logged else { return }
        logger.warning(
            "Trace export failed",
            metadata: [
                "otlp.endpoint": "\(RedactedURL(tracesURL))", "cause": "\(cause)", "spans.lost": "\(logged)",
            ])
    }
}
