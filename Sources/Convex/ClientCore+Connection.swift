import ConvexSyncProtocol
import ConvexValues
import Logging
import NIOPosix
import TimeSource

extension ClientCore {
    private enum LoopStep {
        case stop
        case waitForCredentials
        case connect(provider: ConvexTokenProvider?, forceRefresh: Bool)
    }

    /// The one long-lived connection task: connect, serve the socket, back off, repeat until closed.
    func connectionLoop() async {
        while !Task.isCancelled {
            let step: LoopStep = state.withLock { l in
                switch l.sync.phase {
                case .closed:
                    return .stop
                case .authenticationFailed:
                    return .waitForCredentials
                default:
                    l.sync.connectAttemptStarted()
                    let provider = l.sync.auth == .provider ? l.tokenProvider : nil
                    return .connect(provider: provider, forceRefresh: l.sync.forceTokenRefresh)
                }
            }
            switch step {
            case .stop:
                return
            case .waitForCredentials:
                await wakeSignal.wait(timeout: nil, on: configuration.clock)
                continue
            case .connect(let provider, let forceRefresh):
                if let provider {
                    do {
                        let jwt = try await provider(forceRefresh)
                        state.withLock { $0.sync.providerTokenResolved(jwt.map { .user($0) }) }
                    } catch {
                        logger.warning("Convex token provider failed", metadata: ["error": "\(error)"])
                        let deferred = state.withLock { l in
                            applyLocked(l.sync.tokenProviderFailed("Token provider failed: \(error)"), &l)
                        }
                        deferred.run(self)
                        continue
                    }
                }
                let reason = await runSocket()
                if Task.isCancelled { return }
                let delay = finishSocket(reason: reason)
                if let delay {
                    logger.debug(
                        "Convex connection lost; reconnecting",
                        metadata: ["reason": "\(reason)", "delay": "\(delay)"])
                    await wakeSignal.wait(timeout: delay, on: configuration.clock)
                }
            }
        }
    }

    /// Ends the socket's bookkeeping: stale frames are ignored from now on, in-flight actions fail, and the state
    /// machine picks the reconnect delay (`nil`: do not reconnect).
    private func finishSocket(reason: String) -> Duration? {
        let (deferred, delay): (Deferred, Duration?) = state.withLock { l in
            l.generation += 1
            l.outbound?.close()
            l.outbound = nil
            let (effects, delay) = l.sync.connectionClosed(reason: reason, jitter: Double.random(in: 0...1))
            return (applyLocked(effects, &l), delay)
        }
        deferred.run(self)
        return delay
    }

    // MARK: One socket

    /// Opens one WebSocket and serves it until it ends; returns the reason it ended.
    ///
    /// The socket's callbacks run on its event loop: a frame is parsed and applied to the state machine there, and
    /// the caller or subscriber waiting for it is resumed from there.
    private func runSocket() async -> String {
        let clock = configuration.clock
        let activity = SocketActivity(clock: clock)
        let outcome = OneShot<String>()
        let generation: UInt64 = state.withLock { l in
            l.activity = activity
            return l.generation
        }
        let watchdog = SocketWatchdog(
            startedAt: clock.now, connectTimeout: configuration.connectTimeout,
            inactivityTimeout: configuration.inactivityTimeout, pingInterval: configuration.pingInterval,
            url: webSocketURL)
        let socket = ClientSocket.connect(
            url: webSocketURL,
            clientID: configuration.clientID,
            maxMessageSize: configuration.maxMessageSize,
            on: MultiThreadedEventLoopGroup.singleton.next(),
            opened: { [self] socket in
                activity.opened()
                if !socketOpened(generation: generation, socket: socket) {
                    outcome.complete("Connection closed")
                    socket.close()
                }
            },
            text: { [self] socket, text in
                activity.messageReceived()
                let decoded: ServerMessage
                do throws(SyncProtocolError) {
                    decoded = try ServerMessage(json: text.utf8)
                } catch {
                    outcome.complete(error.message)
                    socket.close()
                    return
                }
                if let reset = received(decoded, generation: generation) {
                    outcome.complete(reset)
                    socket.close()
                }
            },
            pong: { activity.pongReceived() },
            ended: { reason in outcome.complete(reason) })

        // On the configuration's clock: a test clock moves through these timeouts instead of sleeping.
        let watching = Task {
            while !Task.isCancelled {
                do { try await clock.sleep(for: watchdog.tick) } catch { return }
                let now = clock.now
                switch watchdog.check(activity.snapshot, now: now) {
                case .carryOn:
                    break
                case .sendPing:
                    activity.pingSent(at: now)
                    socket.sendPing()
                case .end(let reason):
                    outcome.complete(reason)
                    return
                }
            }
        }
        let reason = await withTaskCancellationHandler {
            await outcome.wait()
        } onCancel: {
            outcome.complete("Client closed")
        }
        watching.cancel()
        socket.close()
        return reason
    }

    /// The WebSocket handshake finished: hand the client the socket and send the protocol handshake.
    private func socketOpened(generation: UInt64, socket: ClientSocket) -> Bool {
        let deferred: Deferred? = state.withLock { l in
            guard l.generation == generation, l.sync.phase == .connecting else { return nil }
            l.outbound = socket
            return applyLocked(l.sync.connectionOpened(), &l)
        }
        deferred?.run(self)
        if deferred != nil {
            logger.debug("Convex connection open", metadata: ["url": "\(webSocketURL)"])
        }
        return deferred != nil
    }

    /// One decoded server message; returns a reset reason when the message breaks the protocol.
    private func received(_ message: ServerMessage, generation: UInt64) -> String? {
        let (deferred, reset): (Deferred?, String?) = state.withLock { l in
            guard l.generation == generation else { return (nil, "Stale connection") }
            let effects = l.sync.receive(message)
            return (applyLocked(effects, &l), effects.resetConnection)
        }
        deferred?.run(self)
        if let reset {
            logger.notice("Convex connection reset by a server message", metadata: ["reason": "\(reset)"])
        }
        return reset
    }
}
