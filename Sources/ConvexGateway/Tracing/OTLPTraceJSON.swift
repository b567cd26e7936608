/// The OTLP/HTTP JSON body of spans (`ExportTraceServiceRequest` in the proto3 JSON mapping, as the OTLP
/// specification writes it: ids as lower-case hex, enums as numbers, 64-bit integers as strings): one resource (the
/// gateway), one scope, every span of the batch.
package enum OTLPTraceJSON {
    /// `SPAN_KIND_SERVER`.
    static let serverKind = 2
    /// `STATUS_CODE_ERROR`.
    static let errorStatus = 2

    package static func encode(_ spans: [FinishedSpan], serviceName: String, version: String) -> [UInt8] {
        var json = #"{"resourceSpans":[{"resource":{"attributes":["#
        attribute("service.name", string: serviceName, into: &json)
        json += ","
        attribute("service.version", string: version, into: &json)
        json += #"]},"scopeSpans":[{"scope":{"name":"convex-gateway","version":"#
        string(version, into: &json)
        json += #"},"spans":["#
        for (index, span) in spans.enumerated() {
            if index > 0 { json += "," }
            encode(span, into: &json)
        }
        json += "]}]}]}"
        return Array(json.utf8)
    }

    static func encode(_ span: FinishedSpan, into json: inout String) {
        json += #"{"traceId":""# + span.trace.traceID.description + #"","spanId":""#
        json += span.trace.spanID.description + "\""
        if let parent = span.trace.parentID { json += #","parentSpanId":""# + parent.description + "\"" }
        if let state = span.trace.traceState {
            json += #","traceState":"#
            string(state, into: &json)
        }
        json += #","name":"#
        string(span.name, into: &json)
        json += #","kind":\#(serverKind),"startTimeUnixNano":"\#(span.startUnixNanos)","#
        json += #""endTimeUnixNano":"\#(span.endUnixNanos)","attributes":["#
        attribute("http.request.method", string: span.method, into: &json)
        json += ","
        attribute("http.route", string: span.route, into: &json)
        json += #",{"key":"http.response.status_code","value":{"intValue":"\#(span.status)"}}"#
        if let function = span.function {
            json += ","
            attribute("convex.function", string: function, into: &json)
        }
        if let upstream = span.upstreamDuration {
            let milliseconds =
                Double(upstream.components.seconds) * 1000
                + Double(upstream.components.attoseconds) / 1e15
            json += #",{"key":"convex.upstream_duration_ms","value":{"doubleValue":\#(milliseconds)}}"#
        }
        if span.status >= 500 {
            json += ","
            attribute("error.type", string: String(span.status), into: &json)
        }
        json += "]"
        if span.status >= 500 { json += #","status":{"code":\#(errorStatus)}"# }
        json += "}"
    }

    private static func attribute(_ key: String, string value: String, into json: inout String) {
        json += #"{"key":"#
        string(key, into: &json)
        json += #","value":{"stringValue":"#
        string(value, into: &json)
        json += "}}"
    }

    /// A JSON string literal of `text`.
    private static func string(_ text: String, into json: inout String) {
        JSONLogHandler.appendString(text, to: &json)
    }
}
