import ConvexSyncProtocol
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import Synchronization

/// A WebSocket server that answers the client with scripted frames, for the cases a real deployment never
/// produces (protocol violations). Every client frame is recorded with the index of its socket.
final class ScriptedSyncServer: Sendable {
    /// Called for each client frame; `send` writes a raw text frame on that socket.
    typealias Script =
        @Sendable (
            _ socket: Int, _ message: ClientMessage, _ send: @Sendable (String) async throws -> Void
        ) async throws -> Void

    private let received = Mutex<[(socket: Int, message: ClientMessage)]>([])
    private let sockets = Mutex(0)
    private let clientHeaders = Mutex<[String]>([])

    /// The `Convex-Client` header of every upgrade request.
    var convexClientHeaders: [String] { clientHeaders.withLock { $0 } }

    var receivedMessages: [(socket: Int, message: ClientMessage)] { received.withLock { $0 } }
    var socketCount: Int { sockets.withLock { $0 } }

    /// Runs `body` with a server on 127.0.0.1 and a free port; stops the server afterwards.
    static func with<R: Sendable>(
        script: @escaping Script, _ body: (_ url: String, _ server: ScriptedSyncServer) async throws -> R
    ) async throws -> R {
        let server = ScriptedSyncServer()
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let router = Router(context: BasicRequestContext.self)
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(configuration: .init()) { head, _, _ in
                if let name = HTTPField.Name("Convex-Client") {
                    server.clientHeaders.withLock { $0.append(head.headerFields[name] ?? "") }
                }
                return .upgrade([:]) { inbound, outbound, _ in
                    let socket = server.sockets.withLock { count in
                        defer { count += 1 }
                        return count
                    }
                    let send: @Sendable (String) async throws -> Void = { text in
                        try await outbound.write(.text(text))
                    }
                    for try await frame in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = frame, let message = try? ClientMessage(json: text) else {
                            continue
                        }
                        server.received.withLock { $0.append((socket, message)) }
                        try await script(socket, message, send)
                    }
                }
            },
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: Logger(label: "scripted-sync-server")
        )
        let task = Task { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await task.value
            throw ScriptedServerNotListening()
        }
        do {
            let result = try await body("http://127.0.0.1:\(port)", server)
            task.cancel()
            _ = try? await task.value
            return result
        } catch {
            task.cancel()
            _ = try? await task.value
            throw error
        }
    }
}

struct ScriptedServerNotListening: Error {}
