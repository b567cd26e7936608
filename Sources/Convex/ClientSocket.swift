import ConvexSyncProtocol
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization
import WebSocketKit

/// The client's WebSocket to the deployment: websocket-kit's channel handlers on one NIO event loop, so a frame
/// reaches the client in a callback on the loop that read it, and a frame goes out with one hop to that loop.
///
/// Outbound frames are queued under the client's lock (so in the state machine's order) and written on the event
/// loop by whichever drain runs next; every write happens on the loop, each drain takes everything queued so far, so
/// the wire order is the queue order whichever thread queued a frame. A drain runs inline when the flushing code is
/// already on the loop (the reader), else it is scheduled once for all frames queued until it runs. The queue's lock
/// is taken under the client's lock, never the reverse.
///
/// Inbound text frames, the end of the socket and its reason are reported through the callbacks given to
/// ``connect(url:clientID:maxMessageSize:on:opened:text:pong:ended:)``, all on the event loop, in order. WebSocket
/// pings from the server are answered by websocket-kit; the client's own pings (``sendPing()``) are timed by its
/// watchdog (``SocketWatchdog``), on the client's clock.
final class ClientSocket: Sendable {
    private struct State {
        var pending: [ClientMessage] = []
        var drainScheduled = false
        var closed = false
        var channel: (any Channel)?
        var webSocket: WebSocket?
        /// Code and reason of the server's close frame, if it sent one.
        var serverClose: (code: UInt16, reason: String)?
    }

    /// A socket whose close handshake has not finished after this long is closed without it.
    static let closeTimeout: TimeAmount = .seconds(1)

    let eventLoop: any EventLoop
    private let state = Mutex(State())

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    // MARK: Outbound

    /// Queues frames; called under the client's lock, so the queue order is the state machine's order.
    func enqueue(_ messages: [ClientMessage]) {
        state.withLock { state in
            guard !state.closed else { return }
            state.pending.append(contentsOf: messages)
        }
    }

    /// Writes the queued frames: right here on the event loop, else from a drain scheduled on it.
    func flush() {
        if eventLoop.inEventLoop {
            drain()
            return
        }
        let schedule: Bool = state.withLock { state in
            guard !state.closed, !state.drainScheduled, !state.pending.isEmpty else { return false }
            state.drainScheduled = true
            return true
        }
        if schedule {
            eventLoop.execute { self.drain() }
        }
    }

    /// On the event loop: writes everything queued, in order.
    private func drain() {
        let (batch, webSocket): ([ClientMessage], WebSocket?) = state.withLock { state in
            state.drainScheduled = false
            guard !state.closed, let webSocket = state.webSocket, !state.pending.isEmpty else { return ([], nil) }
            defer { state.pending = [] }
            return (state.pending, webSocket)
        }
        guard let webSocket else { return }
        for message in batch {
            let buffer = ByteBuffer(string: message.jsonText)
            webSocket.send(buffer, opcode: .text, fin: true, promise: nil)
        }
    }

    // MARK: Closing

    /// Drops queued frames and ends the socket: the close handshake if it is open (closed without it after
    /// ``closeTimeout``), else the connection. Idempotent; callable from any thread.
    func close() {
        let (channel, webSocket): ((any Channel)?, WebSocket?) = state.withLock { state in
            guard !state.closed else { return (nil, nil) }
            state.closed = true
            state.pending = []
            return (state.channel, state.webSocket)
        }
        if let webSocket, let channel {
            webSocket.close(code: .normalClosure, promise: nil)
            eventLoop.scheduleTask(in: Self.closeTimeout) { channel.close(promise: nil) }
        } else if let channel {
            channel.close(promise: nil)
        }
        // Still connecting: `connected(_:)` closes the channel once it exists.
    }

    /// Sends a WebSocket ping (its pong is reported to the `pong` callback), on the event loop; nothing once closed
    /// or before the handshake has finished.
    func sendPing() {
        guard let webSocket = state.withLock({ $0.closed ? nil : $0.webSocket }) else { return }
        eventLoop.execute { webSocket.sendPing() }
    }

    private var isClosed: Bool { state.withLock { $0.closed } }

    /// The TCP connection exists; closes it at once if the socket was closed meanwhile.
    private func connected(_ channel: any Channel) {
        let closed: Bool = state.withLock { state in
            state.channel = channel
            return state.closed
        }
        if closed { channel.close(promise: nil) }
    }

    /// Why the socket ended, once its channel closed.
    private var endReason: String {
        state.withLock { state in
            guard let close = state.serverClose else { return "Connection closed" }
            return close.reason.isEmpty ? "Closed by server (code \(close.code))" : close.reason
        }
    }

    // MARK: Connecting

    /// Opens a socket to `url` (`ws` or `wss`) with the `Convex-Client` header.
    ///
    /// - `opened`: the WebSocket handshake finished; frames can be queued.
    /// - `text`: one inbound text message (fragments joined), in order.
    /// - `ended`: the socket failed or closed, or the server broke the WebSocket protocol, with the reason; called
    ///   once (frames still in flight may be reported after it; the client ignores them).
    static func connect(
        url: String,
        clientID: String,
        maxMessageSize: Int,
        on eventLoop: any EventLoop,
        opened: @escaping @Sendable (ClientSocket) -> Void,
        text: @escaping @Sendable (ClientSocket, String) -> Void,
        pong: @escaping @Sendable () -> Void,
        ended: @escaping @Sendable (String) -> Void
    ) -> ClientSocket {
        let socket = ClientSocket(eventLoop: eventLoop)
        let end = OnceCallback(ended)
        guard let parsed = URL(string: url), let host = parsed.host, let scheme = parsed.scheme,
            scheme == "ws" || scheme == "wss"
        else {
            end("Invalid WebSocket URL \(url)")
            return socket
        }
        let tls = scheme == "wss"
        let port = parsed.port ?? (tls ? 443 : 80)
        var target = parsed.path.isEmpty ? "/" : parsed.path
        if let query = parsed.query { target += "?\(query)" }
        var headers = HTTPHeaders()
        // An IPv6 literal goes back into brackets in the Host header (RFC 7230 §5.4).
        let hostField = host.contains(":") ? "[\(host)]" : host
        headers.add(name: "Host", value: parsed.port == nil ? hostField : "\(hostField):\(port)")
        headers.add(name: "Convex-Client", value: clientID)
        let requestHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)
        let sslContext: NIOSSLContext?
        if tls {
            do {
                sslContext = try NIOSSLContext(configuration: .makeClientConfiguration())
            } catch {
                end("Connection to \(url) failed: \(error)")
                return socket
            }
        } else {
            sslContext = nil
        }
        let webSocketConfiguration = {
            var configuration = WebSocket.Configuration()
            configuration.maxAccumulatedFrameSize = maxMessageSize
            return configuration
        }()

        let bootstrap = ClientBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.socket(SocketOptionLevel(IPPROTO_TCP), TCP_NODELAY), value: 1)
            .channelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    if let sslContext {
                        let handler: NIOSSLClientHandler
                        do {
                            handler = try NIOSSLClientHandler(context: sslContext, serverHostname: host)
                        } catch let error as NIOSSLExtraError where error == .cannotUseIPAddressInSNI {
                            handler = try NIOSSLClientHandler(context: sslContext, serverHostname: nil)
                        }
                        try sync.addHandler(handler)
                    }
                    let request = UpgradeRequestHandler(head: requestHead) { reason in
                        end("Connection to \(url) failed: \(reason)")
                    }
                    let requestBox = NIOLoopBound(request, eventLoop: channel.eventLoop)
                    let upgrader = NIOWebSocketClientUpgrader(
                        maxFrameSize: maxMessageSize, automaticErrorHandling: true
                    ) { channel, _ in
                        do {
                            try channel.pipeline.syncOperations.addHandler(CloseFrameObserver(socket: socket))
                        } catch {
                            return channel.eventLoop.makeFailedFuture(error)
                        }
                        return WebSocket.client(on: channel, config: webSocketConfiguration) { webSocket in
                            socket.upgraded(webSocket, opened: opened, text: text, pong: pong, end: end)
                        }
                    }
                    try sync.addHTTPClientHandlers(
                        leftOverBytesStrategy: .forwardBytes,
                        withClientUpgrade: (
                            upgraders: [upgrader],
                            completionHandler: { context in
                                context.pipeline.syncOperations.removeHandler(requestBox.value, promise: nil)
                            }
                        ))
                    try sync.addHandler(request)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        bootstrap.connect(host: host, port: port).whenComplete { result in
            switch result {
            case .success(let channel):
                socket.connected(channel)
                channel.closeFuture.whenComplete { _ in
                    end(socket.endReason)
                    socket.state.withLock { state in
                        state.closed = true
                        state.pending = []
                        // Breaks the cycle socket → WebSocket → callbacks → socket.
                        state.webSocket = nil
                        state.channel = nil
                    }
                }
            case .failure(let error):
                end("Connection to \(url) failed: \(error)")
            }
        }
        return socket
    }

    /// On the event loop, before any frame of the upgraded connection is read.
    private func upgraded(
        _ webSocket: WebSocket,
        opened: @Sendable (ClientSocket) -> Void,
        text: @escaping @Sendable (ClientSocket, String) -> Void,
        pong: @escaping @Sendable () -> Void,
        end: OnceCallback
    ) {
        // The callbacks hold the socket until its channel closes, which drops the socket's hold on the WebSocket.
        webSocket.onText { _, message in
            // After `close()` the client is done with the socket; frames still arriving are not its business.
            guard !self.isClosed else { return }
            text(self, message)
        }
        webSocket.onPong { _, _ in pong() }
        webSocket.onBinary { _, _ in
            end("Server sent a binary frame")
            self.close()
        }
        let closed: Bool = state.withLock { state in
            state.webSocket = webSocket
            return state.closed
        }
        // Closed while upgrading: the channel is already closing.
        if closed { return }
        opened(self)
    }

    fileprivate func serverSentClose(code: UInt16, reason: String) {
        state.withLock { state in
            if state.serverClose == nil { state.serverClose = (code, reason) }
        }
    }
}

/// A callback that runs at most once.
private final class OnceCallback: Sendable {
    private let callback: Mutex<(@Sendable (String) -> Void)?>

    init(_ callback: @escaping @Sendable (String) -> Void) {
        self.callback = Mutex(callback)
    }

    func callAsFunction(_ reason: String) {
        let callback = self.callback.withLock { callback in
            defer { callback = nil }
            return callback
        }
        callback?(reason)
    }
}

/// Sends the upgrade request once the connection is up; any HTTP response that reaches it means the server refused
/// the upgrade (a successful upgrade is consumed by NIO's upgrade handler, which then removes this handler).
private final class UpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let head: HTTPRequestHead
    private let failed: @Sendable (String) -> Void
    private var sent = false

    init(head: HTTPRequestHead, failed: @escaping @Sendable (String) -> Void) {
        self.head = head
        self.failed = failed
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
        context.fireChannelActive()
    }

    private func send(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response):
            failed(
                "the server answered the WebSocket upgrade with \(response.status.code) \(response.status.reasonPhrase)"
            )
        case .body:
            break
        case .end:
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failed("\(error)")
        context.close(promise: nil)
    }
}

/// Notes the code and reason of the server's close frame (websocket-kit keeps only the code) and passes every
/// frame on.
private final class CloseFrameObserver: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame

    private let socket: ClientSocket

    init(socket: ClientSocket) {
        self.socket = socket
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.opcode == .connectionClose {
            var payload = frame.unmaskedData
            let code = payload.readInteger(as: UInt16.self) ?? 1005
            let reason = payload.readString(length: payload.readableBytes) ?? ""
            socket.serverSentClose(code: code, reason: reason)
        }
        context.fireChannelRead(data)
    }
}
