/// A request's span once its response has started: what the OTLP exporter sends of it. Never a header's value, a
/// credential, the query string or arguments.
package struct FinishedSpan: Sendable {
    package var trace: RequestTrace
    package var method: String
    /// The route's template (`/mutation/{function}`), never the raw path.
    package var route: String
    package var status: Int
    package var function: String?
    /// Wall-clock times, nanoseconds since 1970.
    package var startUnixNanos: Int64
    package var endUnixNanos: Int64
    /// How long the deployment took to answer the request's call, where the gateway knows it (mutations, actions,
    /// posted queries).
    package var upstreamDuration: Duration?

    package init(
        trace: RequestTrace, method: String, route: String, status: Int, function: String?, startUnixNanos: Int64,
        endUnixNanos: Int64, upstreamDuration: Duration?
    ) {
        self.trace = trace
        self.method = method
        self.route = route
        self.status = status
        self.function = function
        self.startUnixNanos = startUnixNanos
        self.endUnixNanos = endUnixNanos
        self.upstreamDuration = upstreamDuration
    }

    /// The span's name, as OpenTelemetry's HTTP conventions make a server span's: `<method> <route>`.
    package var name: String { "\(method) \(route)" }
}
