import ConvexGateway
import Foundation
import Testing

/// The OTLP/HTTP JSON body of a batch of spans, read back as JSON (OTLPExportTests has a real receiver check it
/// against the protocol's schema).
@Suite("OTLP trace JSON")
struct OTLPTraceJSONTests {
    static func span(status: Int, upstream: Duration?, parent: String?) -> FinishedSpan {
        FinishedSpan(
            trace: RequestTrace(
                traceparent: parent.map { "00-4bf92f3577b34da6a3ce929d0e0e4736-\($0)-01" }, tracestate: "v=\"1\""),
            method: "POST", route: "/mutation/{function}", status: status, function: "messages:send",
            startUnixNanos: 1_700_000_000_000_000_000, endUnixNanos: 1_700_000_000_002_500_000,
            upstreamDuration: upstream)
    }

    @Test("resource, scope and each span with ids in hex, times as strings, attributes and an error status for 5xx")
    func encoding() throws {
        let ok = Self.span(status: 200, upstream: .microseconds(1500), parent: "00f067aa0ba902b7")
        let failed = Self.span(status: 502, upstream: nil, parent: nil)
        let body = OTLPTraceJSON.encode([ok, failed], serviceName: "convex-gateway", version: "1.2.3")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let resourceSpans = try #require(json["resourceSpans"] as? [[String: Any]])
        let resource = try #require(resourceSpans.first?["resource"] as? [String: Any])
        #expect(Self.attributes(resource)["service.name"] as? String == "convex-gateway")
        let scopeSpans = try #require(resourceSpans.first?["scopeSpans"] as? [[String: Any]])
        let spans = try #require(scopeSpans.first?["spans"] as? [[String: Any]])
        #expect(spans.count == 2)

        let first = spans[0]
        #expect(first["traceId"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(first["spanId"] as? String == ok.trace.spanID.description)
        #expect(first["parentSpanId"] as? String == "00f067aa0ba902b7")
        #expect(first["traceState"] as? String == "v=\"1\"")
        #expect(first["name"] as? String == "POST /mutation/{function}")
        #expect(first["kind"] as? Int == 2)
        #expect(first["startTimeUnixNano"] as? String == "1700000000000000000")
        #expect(first["endTimeUnixNano"] as? String == "1700000000002500000")
        #expect(first["status"] == nil)
        let attributes = Self.attributes(first)
        #expect(attributes["http.request.method"] as? String == "POST")
        #expect(attributes["http.route"] as? String == "/mutation/{function}")
        #expect(attributes["http.response.status_code"] as? String == "200")
        #expect(attributes["convex.function"] as? String == "messages:send")
        #expect(attributes["convex.upstream_duration_ms"] as? Double == 1.5)

        let second = spans[1]
        #expect(second["parentSpanId"] == nil)
        #expect((second["traceId"] as? String)?.wholeMatch(of: /[0-9a-f]{32}/) != nil)
        #expect((second["status"] as? [String: Any])?["code"] as? Int == 2)
        #expect(Self.attributes(second)["error.type"] as? String == "502")
        #expect(Self.attributes(second)["convex.upstream_duration_ms"] == nil)
    }

    @Test("the traces URL of an endpoint, with or without a trailing slash")
    func tracesURL() {
        #expect(SpanExporter.tracesURL("http://collector:4318") == "http://collector:4318/v1/traces")
        #expect(SpanExporter.tracesURL("http://collector:4318/") == "http://collector:4318/v1/traces")
        #expect(SpanExporter.tracesURL("https://otel.example/base") == "https://otel.example/base/v1/traces")
    }

    /// An OTLP object's `attributes`, key to the value's one field.
    static func attributes(_ object: [String: Any]) -> [String: Any] {
        var found: [String: Any] = [:]
        for attribute in object["attributes"] as? [[String: Any]] ?? [] {
            guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any] else {
                continue
            }
            found[key] = value.values.first
        }
        return found
    }
}
