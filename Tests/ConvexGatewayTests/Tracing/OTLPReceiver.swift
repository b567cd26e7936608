import Foundation
import TestSupport

/// An OTLP/HTTP trace receiver for tests, in Python with `opentelemetry-proto` (scripts/requirements-test.txt): it
/// takes `POST /v1/traces` with a JSON body, turns the OTLP JSON's hex ids into the proto3 mapping's base64 (as the
/// OpenTelemetry Collector does) and parses the body with `google.protobuf.json_format.Parse` into the real
/// `ExportTraceServiceRequest`, which refuses an unknown field or a value of the wrong type (answered 400). Each span it
/// takes is appended to the output file as one JSON line, ids back in hex.
enum OTLPReceiver {
    /// Starts the receiver, runs `body` with its port and the file it writes spans to, then stops it.
    static func run<T: Sendable>(_ body: (_ port: Int, _ spans: String) async throws -> T) async throws -> T {
        let output = FileManager.default.temporaryDirectory
            .appendingPathComponent("otlp-spans-\(UUID().uuidString).jsonl").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: output) }
        return try await PythonHelper.run("otlp", script: script, arguments: [output]) { port in
            try await body(port, output)
        }
    }

    /// The spans received so far, each a JSON object (`traceId`, `spanId`, `parentSpanId`, `name`, `kind`,
    /// `attributes` as key to value, `status`), and the file's text.
    static func spans(in path: String) -> (spans: [[String: Any]], text: String) {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let spans = text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        return (spans, text)
    }

    /// `python -c script <output file>`
    static let script = """
        import base64, json, re, signal, sys
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        OUTPUT = sys.argv[1]
        IDS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}


        def hex_ids_to_base64(body):
            for resource in body.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        for field, digits in IDS.items():
                            if field in span:
                                if not re.fullmatch("[0-9a-f]{%d}" % digits, span[field]):
                                    raise ValueError("%s is not %d hex digits: %r" % (field, digits, span[field]))
                                span[field] = base64.b64encode(bytes.fromhex(span[field])).decode()


        def value_of(any_value):
            kind = any_value.WhichOneof("value")
            return getattr(any_value, kind) if kind else None


        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    if self.path != "/v1/traces":
                        raise ValueError("path " + self.path)
                    if self.headers.get("Content-Type") != "application/json":
                        raise ValueError("Content-Type " + str(self.headers.get("Content-Type")))
                    body = json.loads(data)
                    hex_ids_to_base64(body)
                    request = json_format.Parse(json.dumps(body), ExportTraceServiceRequest())
                except Exception as error:
                    print("refused:", repr(error), data[:2000], flush=True)
                    self.send_response(400)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                lines = []
                for resource in request.resource_spans:
                    service = {a.key: value_of(a.value) for a in resource.resource.attributes}
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            lines.append(json.dumps({
                                "service": service.get("service.name"),
                                "traceId": span.trace_id.hex(),
                                "spanId": span.span_id.hex(),
                                "parentSpanId": span.parent_span_id.hex(),
                                "traceState": span.trace_state,
                                "name": span.name,
                                "kind": span.kind,
                                "start": span.start_time_unix_nano,
                                "end": span.end_time_unix_nano,
                                "attributes": {a.key: value_of(a.value) for a in span.attributes},
                                "status": span.status.code,
                            }))
                with open(OUTPUT, "a") as output:
                    output.write("".join(line + "\\n" for line in lines))
                reply = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass


        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print("otlp.port=%d" % server.server_address[1], flush=True)
        server.serve_forever()
        """
}
