import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A request as the loopback server saw it.
struct ReceivedRequest: Sendable {
    var head: HTTPRequestHead
    var body: [UInt8]
}

/// What the loopback server answers: a status, headers and a body, or `nil` to keep the connection open and silent.
typealias Responder = @Sendable (ReceivedRequest) -> (HTTPResponseStatus, [(String, String)], [UInt8])?

/// Runs an HTTP/1.1 server on 127.0.0.1 (an ephemeral port), over TLS with `tls`, for the duration of `body`.
func withLoopbackServer<Result: Sendable>(
    tls: NIOSSLContext? = nil, _ respond: @escaping Responder, _ body: @Sendable (_ port: Int) async throws -> Result
) async throws -> Result {
    let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
        .bind(host: "127.0.0.1", port: 0) { channel in
            channel.eventLoop.makeCompletedFuture {
                if let tls {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                }
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                    wrappingChannelSynchronously: channel)
            }
        }
    let port = server.channel.localAddress?.port ?? 0
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            try await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { handlers in
                    for try await connection in connections {
                        handlers.addTask { try? await serve(connection, respond) }
                    }
                }
            }
        }
        defer { group.cancelAll() }
        return try await body(port)
    }
}

private func serve(
    _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, _ respond: Responder
) async throws {
    try await connection.executeThenClose { inbound, outbound in
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        for try await part in inbound {
            switch part {
            case .head(let requestHead):
                head = requestHead
                body = []
            case .body(let buffer):
                body.append(contentsOf: buffer.readableBytesView)
            case .end:
                guard let head else { return }
                // No answer: the connection stays open, read until the client leaves or the server is cancelled.
                guard let (status, headers, responseBody) = respond(ReceivedRequest(head: head, body: body)) else {
                    continue
                }
                try await outbound.write(
                    .head(HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders(headers))))
                try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: responseBody))))
                try await outbound.write(.end(nil))
            }
        }
    }
}
