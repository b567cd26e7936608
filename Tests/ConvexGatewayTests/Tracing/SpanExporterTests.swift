import ConvexGateway
import TestSupport
import Testing

/// What the exporter does when spans cannot go: a full queue drops the newest, a collector that refuses the
/// connection loses one batch per flush, both counted in `convex_gateway_trace_spans_dropped_total`, and failures reach the log
/// at most once a minute, without the endpoint's password.
@Suite("Span exporter", .timeLimit(.minutes(1)))
struct SpanExporterTests {
    static func span() -> FinishedSpan {
        FinishedSpan(
            trace: RequestTrace(traceparent: nil, tracestate: nil), method: "GET", route: "/query/{function}",
            status: 200, function: "echo:echo", startUnixNanos: 1, endUnixNanos: 2, upstreamDuration: nil)
    }

    static func dropped(_ metrics: GatewayMetrics) -> String? {
        let lines = String(decoding: metrics.render(), as: UTF8.self).split(separator: "\n")
        let line = lines.first { $0.hasPrefix("convex_gateway_trace_spans_dropped_total ") }
        return line.map { String($0.split(separator: " ")[1]) }
    }

    @Test("a full queue drops spans; a refused post loses its batch, the rest wait; one warning a minute, no password")
    func dropsAndFailures() async throws {
        let recorder = UpstreamFailureLoggingTests.Recorder()
        let metrics = GatewayMetrics()
        let port = try await withRefusingPort { port in
            let exporter = SpanExporter(
                endpoint: "http://user:hunter2@127.0.0.1:\(port)", serviceVersion: "test", logger: recorder.logger,
                metrics: metrics, clock: .continuous)
            for _ in 0..<(SpanExporter.capacity + 3) { exporter.record(Self.span()) }
            #expect(Self.dropped(metrics) == "3")

            // A failed post loses its batch; the rest wait for the next flush.
            await exporter.flush()
            #expect(Self.dropped(metrics) == "\(3 + SpanExporter.batchSize)")
            await exporter.flush()
            #expect(Self.dropped(metrics) == "\(3 + 2 * SpanExporter.batchSize)")
            return port
        }

        let messages = recorder.messages.withLock { $0 }
        #expect(messages.count == 1, "\(messages)")
        let warning = try #require(messages.first)
        #expect(warning.hasPrefix("warning Trace export failed "))
        #expect(warning.contains("otlp.endpoint=http://127.0.0.1:\(port)/v1/traces"), "\(warning)")
        #expect(warning.contains("spans.lost=\(SpanExporter.batchSize)"), "\(warning)")
        #expect(!warning.contains("hunter2"), "\(warning)")
    }
}
