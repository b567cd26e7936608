import Synchronization

/// Whether requests get a trace (``RequestTrace``), and where their spans go: a request is traced when its access log
/// line is written (for its `trace_id` and `span_id`) or its span is exported (`--otlp-endpoint`). Off, a request
/// reads no header and builds nothing for tracing, the hot `GET` included.
package struct RequestTracing: Sendable {
    package let isOn: Bool
    /// The OTLP exporter, with `--otlp-endpoint`.
    package let exporter: SpanExporter?
    private let clock: GatewayClock

    package init(logsTraces: Bool, exporter: SpanExporter?, clock: GatewayClock) {
        isOn = logsTraces || exporter != nil
        self.exporter = exporter
        self.clock = clock
    }

    /// The trace of a request, from its `traceparent` and `tracestate`; `nil` when tracing is off.
    package func start(_ header: (String) -> String?) -> RequestTrace? {
        guard isOn else { return nil }
        return RequestTrace(traceparent: header("traceparent"), tracestate: header("tracestate"))
    }

    /// Where the request's upstream time is summed while it is handled (``UpstreamTime/current``), when its span is
    /// exported.
    package func upstreamTime(for trace: RequestTrace?) -> UpstreamTime? {
        exporter != nil && trace != nil ? UpstreamTime(clock: clock) : nil
    }

    /// Exports the span of a request answered now, after `duration`.
    package func answered(
        _ trace: RequestTrace?, method: String, route: String, status: Int, function: String?, duration: Duration,
        upstream: UpstreamTime?
    ) {
        guard let exporter, let trace else { return }
        let end = Int64((clock.wallSeconds * 1e9).rounded(.down))
        let nanos = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        exporter.record(
            FinishedSpan(
                trace: trace, method: method, route: route, status: status, function: function,
                startUnixNanos: end - nanos, endUnixNanos: end, upstreamDuration: upstream?.total))
    }
}

/// The time a request's calls waited for the deployment, summed: bound as ``current`` while a traced request is
/// handled, and added to by the call stage around each upstream call.
package final class UpstreamTime: Sendable {
    @TaskLocal package static var current: UpstreamTime?

    package let clock: GatewayClock
    private let sum = Mutex<Duration?>(nil)

    package init(clock: GatewayClock) { self.clock = clock }

    /// Adds the time since `start` (on ``clock``).
    package func add(since start: Duration) {
        let elapsed = clock.now - start
        sum.withLock { $0 = ($0 ?? .zero) + elapsed }
    }

    /// The time summed, `nil` when no call was timed.
    package var total: Duration? { sum.withLock { $0 } }
}
