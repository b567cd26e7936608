import Dispatch
import Glibc
import MicroHTTPD

/// Shuts `server` down gracefully on SIGINT/SIGTERM. Lives outside main.swift so the handler is
/// not main-actor isolated (it runs on a Dispatch queue).
func shutDownOnSignals(_ server: HTTPServer) -> [any DispatchSourceSignal] {
    [SIGINT, SIGTERM].map { signalNumber in
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
        source.setEventHandler { Task { await server.shutdown() } }
        source.resume()
        return source
    }
}
