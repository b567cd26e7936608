import Convex
import Prometheus
import Synchronization

/// The gateway's Prometheus metrics, served at `GET /metrics`.
///
/// Each gateway owns its registry (no global bootstrap), so several gateways in one process — as in tests — keep
/// separate figures.
public final class GatewayMetrics: Sendable {
    package let registry: PrometheusCollectorRegistry
    private let activeStreams: Gauge
    private let openConnections: Gauge
    /// Reads the HTTP server's open-connection count when the metrics are rendered.
    private let connectionCounter = Mutex<(@Sendable () -> Int)?>(nil)
    private let upstreamSubscriptions: Gauge
    private let upstreamReconnects: Counter
    /// Requests refused for their API key: missing, or wrong.
    private let apiKeysMissing: Counter
    private let apiKeysWrong: Counter
    private let traceSpansDropped: Counter
    private let requestCounters = Mutex<[RequestKey: Counter]>([:])
    private let durations = Mutex<[String: ValueHistogram]>([:])

    private struct RequestKey: Hashable {
        var route: String
        var status: Int
    }

    /// Request-duration bucket bounds, in seconds.
    static let durationBuckets: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// - Parameter build: the version and commit of the running binary, exposed as
    ///   `convex_gateway_build_info{version,commit} 1` (the Prometheus convention for build information).
    package init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), build: BuildInfo = BuildInfo())
    {
        self.registry = registry
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "convex_gateway", metricName: "build_info",
                helpText: "The running gateway's version and the commit it was built from; always 1"),
            labels: [("version", build.version), ("commit", build.commit)]
        ).set(Int64(1))
        activeStreams = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "convex_gateway", subsystem: "sse", metricName: "active", unitName: "streams",
                helpText: "Server-Sent Event streams currently open"))
        openConnections = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "convex_gateway", subsystem: "http", metricName: "open", unitName: "connections",
                helpText: "TCP connections the HTTP server holds open now, streams and waiting requests included"))
        upstreamSubscriptions = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "convex_gateway", subsystem: "upstream", metricName: "active", unitName: "subscriptions",
                helpText: "Convex query subscriptions the gateway currently holds upstream"))
        upstreamReconnects = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "convex_gateway", subsystem: "upstream", metricName: "reconnects", unitName: "total",
                helpText: "Times an upstream Convex connection was lost and opened again"))
        let keyRefusals = MetricNameDescriptor(
            namespace: "convex_gateway", subsystem: "access", metricName: "api_key_refusals", unitName: "total",
            helpText: "Requests refused for their X-API-Key, by reason (missing or wrong)")
        apiKeysMissing = registry.makeCounter(descriptor: keyRefusals, labels: [("reason", "missing")])
        apiKeysWrong = registry.makeCounter(descriptor: keyRefusals, labels: [("reason", "wrong")])
        traceSpansDropped = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "convex_gateway", subsystem: "trace", metricName: "spans_dropped", unitName: "total",
                helpText: "Request spans not exported: the export queue was full, or the collector did not take them"))
    }

    /// Counts one answered request and records how long it took. `route` is the route's template
    /// (`/query/{function}`), never the raw path, so the label set stays bounded.
    package func recordRequest(route: String, status: Int, duration: Duration) {
        requestRecorder(route: route, status: status).record(duration)
    }

    /// The counter and histogram for answers on one route with one status, looked up once: the hot `GET` path keeps
    /// one instead of finding both on every request.
    package struct RequestRecorder: Sendable {
        let counter: Counter
        let histogram: ValueHistogram

        package func record(_ duration: Duration) {
            counter.increment()
            // In seconds as a `Double`: the same bucket labels as `Duration` buckets render, and each bucket's
            // comparison is one instruction instead of a call (this runs on every hot `GET`).
            histogram.record(duration.seconds)
        }
    }

    package func requestRecorder(route: String, status: Int) -> RequestRecorder {
        let key = RequestKey(route: route, status: status)
        let counter = requestCounters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "convex_gateway", subsystem: "http_server", metricName: "requests", unitName: "total",
                    helpText: "HTTP requests answered, by route and status"),
                labels: [("route", route), ("status", String(status))])
            counters[key] = made
            return made
        }
        let histogram = durations.withLock { histograms in
            if let existing = histograms[route] { return existing }
            let made = registry.makeValueHistogram(
                descriptor: MetricNameDescriptor(
                    namespace: "convex_gateway", subsystem: "http_server", metricName: "request_duration",
                    unitName: "seconds",
                    helpText: "Time from a request's arrival to its response (for streams: to the stream's start)"),
                labels: [("route", route)],
                buckets: Self.durationBuckets)
            histograms[route] = made
            return made
        }
        return RequestRecorder(counter: counter, histogram: histogram)
    }

    package func streamOpened() { activeStreams.increment() }
    package func streamClosed() { activeStreams.decrement() }
    package func upstreamSubscriptionAdded() { upstreamSubscriptions.increment() }
    package func upstreamSubscriptionRemoved() { upstreamSubscriptions.decrement() }
    package func upstreamReconnected() { upstreamReconnects.increment() }
    /// A request was refused for its API key.
    package func apiKeyRefused(missing: Bool) { (missing ? apiKeysMissing : apiKeysWrong).increment() }
    /// Request spans were dropped instead of exported (Tracing/SpanExporter.swift).
    package func traceSpansDropped(_ count: Int) { traceSpansDropped.increment(by: Int64(count)) }

    /// Where the open-connection gauge reads its figure, at each render.
    package func countConnections(with counter: @escaping @Sendable () -> Int) {
        connectionCounter.withLock { $0 = counter }
    }

    /// Prometheus text exposition format.
    package func render() -> [UInt8] {
        if let counter = connectionCounter.withLock({ $0 }) { openConnections.set(Int64(counter())) }
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }
}
