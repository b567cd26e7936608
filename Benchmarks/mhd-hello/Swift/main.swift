// Hello-world on the MicroHTTPD wrapper, answering synchronously on the libmicrohttpd thread.
// The baseline the gateway's hot-GET benchmark is compared with; see Benchmarks/run-mhd-hello.sh.
//   GET /          50-byte JSON, answered synchronously
//   GET /deferred  the same body, answered from a Task (suspend/resume path)
//   GET /events    an idle Server-Sent Events stream (Benchmarks/run-mhd-sse-memory.sh)
// Usage: mhd-hello [port] [threads] [connection-memory-limit-bytes] [plain|prepared]
//   plain (default): a new HTTPResponse per request; prepared: one shared HTTPPreparedResponse.
// SIGINT/SIGTERM shut down gracefully.
import Glibc
import MicroHTTPD

let arguments = CommandLine.arguments
var configuration = HTTPServerConfiguration(
    host: "127.0.0.1", port: arguments.count > 1 ? UInt16(arguments[1]) ?? 18082 : 18082)
if arguments.count > 2, let threads = Int(arguments[2]) {
    configuration.threadPoolSize = threads
}
if arguments.count > 3, let memory = Int(arguments[3]) {
    configuration.connectionMemoryLimit = memory
}
configuration.idleTimeoutSeconds = 30

let body = Array(#"{"ok":true,"service":"gateway","ts":1700000,"v":1}"#.utf8)
let headers: HTTPHeaders = ["Content-Type": "application/json"]
let streamHeaders: HTTPHeaders = [
    "Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no",
]
let prepared = try HTTPPreparedResponse(HTTPResponse(status: 200, headers: headers, body: body))
let usePrepared = arguments.count > 4 && arguments[4] == "prepared"
let server = HTTPServer(configuration: configuration) { request, responder in
    switch request.path {
    case "/events":
        responder.startStream(headers: streamHeaders)?.write(": connected\n\n")
    case "/deferred":
        Task { responder.respond(HTTPResponse(status: 200, headers: headers, body: body)) }
    default:
        if usePrepared {
            responder.respond(prepared)
        } else {
            responder.respond(HTTPResponse(status: 200, headers: headers, body: body))
        }
    }
}
do {
    try server.start()
} catch {
    print("mhd-hello: \(error)")
    exit(1)
}
print("mhd-hello listening on 127.0.0.1:\(server.port ?? 0) with \(configuration.threadPoolSize) threads")

let signalSources = shutDownOnSignals(server)
try await server.run()
print("mhd-hello stopped")
