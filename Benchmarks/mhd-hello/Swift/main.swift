// Hello-world on the MicroHTTPD wrapper, answering synchronously on the libmicrohttpd thread.
// The baseline the gateway's hot-GET benchmark is compared with; see Benchmarks/run-mhd-hello.sh.
// Usage: mhd-hello [port] [threads]
import Glibc
import MicroHTTPD

let arguments = CommandLine.arguments
var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: arguments.count > 1 ? UInt16(arguments[1]) ?? 18082 : 18082)
if arguments.count > 2, let threads = Int(arguments[2]) {
    configuration.threadPoolSize = threads
}
configuration.idleTimeoutSeconds = 30

let body = Array(#"{"ok":true,"service":"gateway","ts":1700000,"v":1}"#.utf8)
let headers: HTTPHeaders = ["Content-Type": "application/json"]
let server = HTTPServer(configuration: configuration) { _, responder in
    responder.respond(HTTPResponse(status: 200, headers: headers, body: body))
}
do {
    try server.start()
} catch {
    print("mhd-hello: \(error)")
    exit(1)
}
print("mhd-hello listening on 127.0.0.1:\(server.port ?? 0) with \(configuration.threadPoolSize) threads")
try await server.run()
