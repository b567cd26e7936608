import Foundation
import TestSupport
import Testing

/// A `traceparent` sent to the real executable reaches its access log and, with `OTEL_EXPORTER_OTLP_ENDPOINT`, a real
/// OTLP receiver as the request's span, in the caller's trace.
@Suite("OTLP export", .timeLimit(.minutes(5)))
struct OTLPExportTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"
    static let apiKey = "otlp-export-api-key-7e2b"

    @Test("a request's traceparent is in its log line and its exported span, with route, status and function")
    func traceparentToLogAndSpan() async throws {
        try await OTLPReceiver.run { receiverPort, spansFile in
            let environment = [
                "LOG_LEVEL": "info", "GATEWAY_API_KEY": Self.apiKey,
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiverPort)",
            ]
            try await TestGateway.run(.process, environment: environment) { gateway in
                let headers = [
                    "Content-Type": "application/json", "X-API-Key": Self.apiKey,
                    "traceparent": "00-\(Self.traceID)-\(Self.parentID)-01", "tracestate": "vendor=opaque",
                ]
                let sent = try await gateway.post(
                    "/mutation/messages:send", json: #"{"body":"traced","channel":"otlp"}"#, headers: headers)
                #expect(sent.status == 200, "\(sent.text)")
                // A malformed traceparent is no error: the request starts a trace of its own.
                let malformed = try await gateway.get(
                    "/query/echo:echo?x=1", headers: ["X-API-Key": Self.apiKey, "traceparent": "00-not-a-trace-01"])
                #expect(malformed.status == 200, "\(malformed.text)")

                // Real time: the exporter sends what waits every second.
                let arrived = await eventually(timeout: .seconds(20)) {
                    OTLPReceiver.spans(in: spansFile).spans.count >= 2
                }
                let (spans, text) = OTLPReceiver.spans(in: spansFile)
                #expect(arrived, "spans received: \(text)\nlog:\n\(gateway.log)")

                let log = gateway.log
                let mutationLine = AccessLogTests.lines(log, message: "Request answered").first {
                    $0["http.route"] == "/mutation/{function}"
                }
                #expect(mutationLine?["trace_id"] == Self.traceID, "\(log)")
                let spanID = try #require(mutationLine?["span_id"], "\(log)")
                #expect(spanID.wholeMatch(of: /[0-9a-f]{16}/) != nil && spanID != Self.parentID)

                let span = try #require(spans.first { $0["traceId"] as? String == Self.traceID }, "\(text)")
                #expect(span["spanId"] as? String == spanID)
                #expect(span["parentSpanId"] as? String == Self.parentID)
                #expect(span["traceState"] as? String == "vendor=opaque")
                #expect(span["name"] as? String == "POST /mutation/{function}")
                #expect(span["kind"] as? Int == 2)
                #expect(span["service"] as? String == "convex-gateway")
                let attributes = try #require(span["attributes"] as? [String: Any])
                #expect(attributes["http.route"] as? String == "/mutation/{function}")
                #expect(attributes["http.request.method"] as? String == "POST")
                #expect(attributes["http.response.status_code"] as? Int == 200)
                #expect(attributes["convex.function"] as? String == "messages:send")
                #expect((attributes["convex.upstream_duration_ms"] as? Double).map { $0 > 0 } == true, "\(text)")
                let start = try #require(span["start"] as? Int), end = try #require(span["end"] as? Int)
                #expect(start > 1_600_000_000_000_000_000 && end >= start)

                // The malformed one: a new trace, no parent, the same trace id in its log line.
                let query = try #require(spans.first { $0["name"] as? String == "GET /query/{function}" }, "\(text)")
                #expect(query["traceId"] as? String != Self.traceID)
                #expect(query["parentSpanId"] as? String == "")
                let queryLine = AccessLogTests.lines(log, message: "Request answered").first {
                    $0["http.route"] == "/query/{function}"
                }
                #expect(queryLine?["trace_id"] == query["traceId"] as? String, "\(log)")
                // No credential reaches a span.
                #expect(!text.contains(Self.apiKey))
            }
        }
    }
}
