import Clocks
import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Synchronization
import Testing
import TimeSource

/// Frames exchanged with a deployment over a real WebSocket.
struct RawSyncExchange {
    var messages: [ServerMessage] = []
    var undecodable: [String] = []
    var closeCode: WebSocketErrorCode?
    var closeReason: String?
}

/// Connects to `/api/sync`, sends `frames`, and reads until `done` says so or the server closes.
func syncExchange(
    _ deployment: LocalDeployment, path: String = "/api/sync", send frames: [String],
    until done: @escaping @Sendable ([ServerMessage]) -> Bool = { _ in false }
) async throws -> RawSyncExchange {
    let collected = Mutex(RawSyncExchange())
    let url = "ws://127.0.0.1:\(deployment.port)\(path)"
    var logger = Logger(label: "raw-sync-client")
    logger.logLevel = .critical
    let close = try await connectRetryingTimeouts(url: url, logger: logger) { inbound, outbound, _ in
        for frame in frames { try await outbound.write(.text(frame)) }
        for try await message in inbound.messages(maxSize: 1 << 25) {
            guard case .text(let text) = message else { continue }
            let finished = collected.withLock { state -> Bool in
                if let decoded = try? ServerMessage(json: text) {
                    state.messages.append(decoded)
                } else {
                    state.undecodable.append(text)
                }
                return done(state.messages)
            }
            if finished { return }
        }
    }
    return collected.withLock { state in
        state.closeCode = close?.closeCode
        state.closeReason = close?.reason
        return state
    }
}

/// `WebSocketClient.connect`, tried again (up to four more times) when the connect times out: the client's connect
/// deadline is NIO's fixed 10 s, which a loaded machine can miss on loopback; nothing was sent, so a retry is safe.
func connectRetryingTimeouts(
    url: String, logger: Logger,
    handler: @escaping WebSocketDataHandler<WebSocketClient.Context>
) async throws -> WebSocketCloseFrame? {
    var attempt = 0
    while true {
        do {
            return try await WebSocketClient.connect(
                url: url, configuration: .init(maxFrameSize: 1 << 25), logger: logger, handler: handler)
        } catch ChannelError.connectTimeout where attempt < 4 {
            attempt += 1
        }
    }
}

func connectFrame(session: String = UUID().uuidString, maxObserved: ConvexTimestamp? = nil) -> String {
    ClientMessage.connect(
        .init(
            sessionId: session, connectionCount: maxObserved == nil ? 0 : 1,
            lastCloseReason: "InitialConnect", maxObservedTimestamp: maxObserved, clientTs: 0)
    ).jsonText
}

@Suite(.timeLimit(.minutes(5)))
struct SyncWebSocketTests {
    static var quietLogger: Logger {
        var logger = Logger(label: "convex-local-test")
        logger.logLevel = .error
        return logger
    }

    /// A deployment whose heartbeats and JSON pings are on a test clock nobody moves: a raw exchange that counts the
    /// frames it reads gets only the ones its test asked for, however slowly the machine answers (on the real clock,
    /// a `Ping` came before a mutation's answer on a loaded machine and took its place).
    func withDeployment(_ body: (LocalDeployment) async throws -> Void) async throws {
        try await withLocalDeployment(
            .init(port: 0, adminKey: "k", clock: ElapsedClock(TestClock())), logger: Self.quietLogger, body)
    }

    @Test func transitionsAreSequencedAsTheReferenceRequires() async throws {
        try await withDeployment { deployment in
            let frames = [
                connectFrame(),
                ClientMessage.modifyQuerySet(
                    .init(
                        baseVersion: 0, newVersion: 1,
                        modifications: [
                            .add(.init(queryId: 0, udfPath: "mlb:first_place_team", args: ["division": "AL East"])),
                            .add(.init(queryId: 1, udfPath: "mlb.js:first_place_team", args: ["division": "NL East"])),
                        ])
                ).jsonText,
                ClientMessage.modifyQuerySet(
                    .init(
                        baseVersion: 1, newVersion: 2,
                        modifications: [
                            .remove(queryId: 1),
                            .add(.init(queryId: 2, udfPath: "mlb", args: [:])),
                        ])
                ).jsonText,
                ClientMessage.mutation(.init(requestId: 0, udfPath: "mlb.js:record_win", args: ["team": "Orioles"]))
                    .jsonText,
            ]
            let result = try await syncExchange(deployment, path: "/api/1.17.0/sync", send: frames) { $0.count >= 4 }
            #expect(result.undecodable.isEmpty)
            guard result.messages.count == 4,
                case .transition(let t1) = result.messages[0], case .transition(let t2) = result.messages[1],
                case .mutationResponse(let response) = result.messages[2], case .transition(let t3) = result.messages[3]
            else {
                Issue.record("unexpected messages \(result.messages)")
                return
            }
            #expect(t1.startVersion == .initial)
            #expect(t1.endVersion.querySet == 1 && t1.endVersion.identity == 0 && t1.endVersion.ts > .zero)
            #expect(Set(t1.modifications.map(\.queryId)) == [0, 1])
            #expect(t2.startVersion == t1.endVersion && t2.endVersion.querySet == 2)
            // Query 0 is unchanged and omitted; query 2 names a missing default export.
            #expect(t2.modifications.count == 2)
            #expect(t2.modifications.contains(.queryRemoved(queryId: 1)))
            if case .queryFailed(2, let message, _, _, nil)? = t2.modifications.first(where: { $0.queryId == 2 }) {
                #expect(message.contains("Could not find public function for 'mlb:default'"))
            } else {
                Issue.record("expected QueryFailed for query 2: \(t2.modifications)")
            }
            guard case .success(let value) = response.result, let ts = response.ts else {
                Issue.record("mutation failed: \(response)"); return
            }
            #expect(value["wins"] == .int64(86))
            #expect(t3.startVersion == t2.endVersion)
            #expect(t3.endVersion.ts >= ts)
            #expect(t3.modifications.map(\.queryId) == [0])
        }
    }

    /// Each failing query is a request of its own, with its own Request ID, as Convex gives them; an unknown function
    /// is worded for this deployment's functions, without Convex's `npx convex dev` advice.
    @Test func eachUnknownFunctionQueryHasItsOwnRequestID() async throws {
        try await withDeployment { deployment in
            let frames = [
                connectFrame(),
                ClientMessage.modifyQuerySet(
                    .init(
                        baseVersion: 0, newVersion: 1,
                        modifications: [
                            .add(.init(queryId: 0, udfPath: "nothing:here", args: [:])),
                            .add(.init(queryId: 1, udfPath: "nothing:there", args: [:])),
                            .add(.init(queryId: 2, udfPath: "nothing:here", args: ["again": true])),
                        ])
                ).jsonText,
            ]
            let result = try await syncExchange(deployment, path: "/api/1.17.0/sync", send: frames) { $0.count >= 1 }
            guard case .transition(let transition)? = result.messages.first else {
                Issue.record("unexpected messages \(result.messages)")
                return
            }
            var requestIDs: [String] = []
            for modification in transition.modifications {
                guard case .queryFailed(_, let message, _, _, nil) = modification else {
                    Issue.record("expected QueryFailed: \(modification)")
                    continue
                }
                #expect(message.contains("Could not find public function for 'nothing:"), "\(message)")
                #expect(message.contains("Did you forget to register it with the local deployment?"), "\(message)")
                #expect(!message.contains("npx"), "\(message)")
                let id = message.split(separator: "]").first.map { String($0.dropFirst("[Request ID: ".count)) }
                requestIDs.append(id ?? "")
            }
            #expect(requestIDs.count == 3)
            #expect(Set(requestIDs).count == 3, "a Request ID per request: \(requestIDs)")
            #expect(requestIDs.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) }, "\(requestIDs)")
        }
    }

    @Test(arguments: [
        ("{not json", "Received invalid JSON message"),
        (#"{"type":"Bogus"}"#, "unknown variant `Bogus`"),
        (
            #"{"type":"ModifyQuerySet","baseVersion":7,"newVersion":8,"modifications":[]}"#,
            "Base version 7 passed up doesn't match the current version 0"
        ),
        (#"{"type":"Authenticate","baseVersion":3,"tokenType":"None"}"#, "identity version"),
        (#"{"type":"Mutation","requestId":0,"udfPath":"echo:echoMutation","args":{"x":1}}"#, "invalid field `args`"),
    ])
    func badFramesGetAFatalErrorAndAClose(frame: String, expected: String) async throws {
        try await withDeployment { deployment in
            let result = try await syncExchange(deployment, send: [connectFrame(), frame])
            guard case .fatalError(let text)? = result.messages.last else {
                Issue.record("expected FatalError, got \(result.messages)"); return
            }
            #expect(text.contains(expected), "\(text)")
            #expect(result.messages.count == 1, "nothing after FatalError")
            #expect(result.closeCode == .normalClosure)
        }
    }

    @Test func oversizeValuesAreRejected() async throws {
        try await withDeployment { deployment in
            var nested: ConvexValue = 1.0
            for _ in 0..<70 { nested = [nested] }
            let deep = ClientMessage.mutation(.init(requestId: 0, udfPath: "echo:echoMutation", args: ["v": nested]))
                .jsonText
            let result = try await syncExchange(deployment, send: [connectFrame(), deep])
            guard case .fatalError(let text)? = result.messages.last else { Issue.record("\(result.messages)"); return }
            #expect(text.contains("too nested"))

            let long = ClientMessage.mutation(
                .init(
                    requestId: 0, udfPath: "echo:echoMutation",
                    args: ["v": .array(Array(repeating: .null, count: 8193))])
            ).jsonText
            let result2 = try await syncExchange(deployment, send: [connectFrame(), long])
            guard case .fatalError(let text2)? = result2.messages.last else {
                Issue.record("\(result2.messages)"); return
            }
            #expect(text2.contains("Array length is too long"))
        }
    }

    @Test func clientAheadOfTheServerIsClosed() async throws {
        try await withDeployment { deployment in
            let future = ConvexTimestamp(nanoseconds: deployment.latestTimestamp.nanoseconds + 3_600_000_000_000)
            let result = try await syncExchange(deployment, send: [connectFrame(maxObserved: future)])
            #expect(result.messages.isEmpty)
            #expect(result.closeCode == .unexpectedServerError)
            #expect(result.closeReason == "InternalServerError")
            // A client that saw an older timestamp (e.g. before a restart) is fine.
            let past = ConvexTimestamp(nanoseconds: deployment.latestTimestamp.nanoseconds - 1)
            let ok = try await syncExchange(
                deployment,
                send: [
                    connectFrame(maxObserved: past),
                    ClientMessage.modifyQuerySet(.init(baseVersion: 0, newVersion: 1, modifications: [])).jsonText,
                ]
            ) { !$0.isEmpty }
            if case .transition? = ok.messages.first {} else { Issue.record("\(ok.messages)") }
        }
    }

    @Test func badCredentialsGetAnAuthError() async throws {
        try await withDeployment { deployment in
            for token in [AuthenticationToken.admin("wrong"), .user("garbage")] {
                let result = try await syncExchange(
                    deployment,
                    send: [
                        connectFrame(), ClientMessage.authenticate(.init(baseVersion: 0, token: token)).jsonText,
                    ])
                guard case .authError(let e)? = result.messages.last else {
                    Issue.record("\(result.messages)"); continue
                }
                #expect(e.authUpdateAttempted == true && e.baseVersion == 0)
                #expect(result.messages.count == 1)
            }
        }
    }

    @Test func queryFailedCarriesErrorData() async throws {
        try await withDeployment { deployment in
            let result = try await syncExchange(
                deployment,
                send: [
                    connectFrame(),
                    ClientMessage.modifyQuerySet(
                        .init(
                            baseVersion: 0, newVersion: 1,
                            modifications: [
                                .add(.init(queryId: 0, udfPath: "conformance:convexErrorQuery")),
                                .add(.init(queryId: 1, udfPath: "conformance:plainErrorQuery")),
                            ])
                    ).jsonText,
                ]
            ) { !$0.isEmpty }
            guard case .transition(let t)? = result.messages.first else { Issue.record("\(result.messages)"); return }
            #expect(
                t.modifications.contains {
                    if case .queryFailed(0, _, _, _, let data?) = $0 {
                        data == ["code": "NOPE", "n": .int64(42)]
                    } else {
                        false
                    }
                })
            #expect(
                t.modifications.contains {
                    if case .queryFailed(1, let message, _, _, nil) = $0 {
                        message.contains("Uncaught Error: boom")
                    } else {
                        false
                    }
                })
        }
    }

    @Test func mutationResentInTheSameSessionRunsOnce() async throws {
        try await withDeployment { deployment in
            let session = UUID().uuidString
            let mutation = ClientMessage.mutation(
                .init(requestId: 4, udfPath: "conformance:increment", args: ["name": "dedupe"])
            ).jsonText
            var responses: [ServerMessage.MutationResponse] = []
            for _ in 0..<2 {
                let result = try await syncExchange(deployment, send: [connectFrame(session: session), mutation]) {
                    $0.count >= 2
                }
                if case .mutationResponse(let r)? = result.messages.first { responses.append(r) }
                if case .transition? = result.messages.last {} else { Issue.record("no Transition after the response") }
            }
            #expect(responses.count == 2 && responses[0] == responses[1])
            #expect(try deployment.query("conformance:counter", ["name": "dedupe"]) == .int64(1))
            // Another session with the same requestId is a different mutation.
            _ = try await syncExchange(deployment, send: [connectFrame(), mutation]) { $0.count >= 2 }
            #expect(try deployment.query("conformance:counter", ["name": "dedupe"]) == .int64(2))
        }
    }

    @Test("mutations sent again on a new socket of the same session while the first one ran them: each runs once")
    func manyMutationsResentAfterACloseRunOnce() async throws {
        try await withDeployment { deployment in
            let session = UUID().uuidString
            let count = 600
            let mutations = (1...count).map { id in
                ClientMessage.mutation(
                    .init(requestId: UInt32(id), udfPath: "conformance:increment", args: ["name": "resent"])
                ).jsonText
            }
            // The first socket is closed at its first answer, with most of its mutations still queued or running.
            _ = try await syncExchange(deployment, send: [connectFrame(session: session)] + mutations) { messages in
                messages.contains { if case .mutationResponse = $0 { true } else { false } }
            }
            // The client sends every one again (it has no answer for them) on its next socket.
            let again = try await syncExchange(deployment, send: [connectFrame(session: session)] + mutations) {
                messages in
                messages.count { if case .mutationResponse = $0 { true } else { false } } >= count
            }
            let results: [ConvexValue] = again.messages.compactMap {
                if case .mutationResponse(let r) = $0, case .success(let value) = r.result { value } else { nil }
            }
            #expect(Set(results) == Set((1...count).map { ConvexValue.int64(Int64($0)) }), "each count once")
            #expect(try deployment.query("conformance:counter", ["name": "resent"]) == .int64(Int64(count)))
        }
    }

    @Test func otherClientsKeepWorkingWhileOneMisbehaves() async throws {
        try await withDeployment { deployment in
            let subscriber = Task {
                try await syncExchange(
                    deployment,
                    send: [
                        connectFrame(),
                        ClientMessage.modifyQuerySet(
                            .init(
                                baseVersion: 0, newVersion: 1,
                                modifications: [
                                    .add(.init(queryId: 0, udfPath: "messages:list", args: ["channel": "calm"]))
                                ])
                        ).jsonText,
                    ]
                    // Two Transitions: the first result, then the write's. A JSON Ping may come between them (after
                    // 15 s without a message, which a loaded machine can take over the junk below).
                ) { $0.filter { if case .transition = $0 { true } else { false } }.count >= 2 }
            }
            try await waitUntil { deployment.syncConnectionCount >= 1 }
            for junk in ["", "null", "[]", #"{"type":"Connect"}"#, String(repeating: "{", count: 10_000)] {
                _ = try await syncExchange(deployment, send: [junk])
            }
            _ = try deployment.mutation("messages:send", ["body": "still here", "channel": "calm"])
            let result = try await subscriber.value
            let last = result.messages.last { if case .transition = $0 { true } else { false } }
            guard case .transition(let t)? = last,
                case .queryUpdated(_, .array(let items), _, _)? = t.modifications.first
            else { Issue.record("\(result.messages)"); return }
            #expect(items.first?["body"] == "still here")
        }
    }

    @Test func jsonPingAfterSilenceAndNothingWhileStalled() async throws {
        var logger = Logger(label: "convex-local-test")
        logger.logLevel = .error
        let configuration = LocalDeployment.Configuration(
            port: 0, heartbeatInterval: .milliseconds(50), jsonPingAfter: .milliseconds(200))
        try await withLocalDeployment(configuration, logger: logger) { deployment in
            // Real time: heartbeats at 50 ms and JSON Pings at 200 ms on the real clock; the check is a lower bound, which load cannot break.
            let start = ContinuousClock.now
            let result = try await syncExchange(deployment, send: [connectFrame()]) { $0.count >= 2 }
            #expect(result.messages == [.ping, .ping])
            #expect(ContinuousClock.now - start >= .milliseconds(400))

            // Stalled: nothing arrives, then the held traffic flows after unstalling.
            deployment.setStalled(true)
            // Real time: when the first held message arrives, against when the stall ended (a lower bound).
            let firstArrival = Mutex<ContinuousClock.Instant?>(nil)
            let stalled = Task {
                try await syncExchange(
                    deployment,
                    send: [
                        connectFrame(),
                        ClientMessage.modifyQuerySet(
                            .init(
                                baseVersion: 0, newVersion: 1,
                                modifications: [.add(.init(queryId: 0, udfPath: "logs:list"))])
                        ).jsonText,
                    ]
                ) { messages in
                    if !messages.isEmpty { firstArrival.withLock { $0 = $0 ?? ContinuousClock.now } }
                    return messages.contains { if case .transition = $0 { true } else { false } }
                }
            }
            // Real time: the deployment's heartbeat (50 ms) and JSON Ping (200 ms) timers run on the real clock; a
            // window of several of their periods shows that the stall holds everything back.
            try await Task.sleep(for: .milliseconds(600))
            let unstalledAt = ContinuousClock.now
            deployment.setStalled(false)
            let after = try await stalled.value
            // Held JSON Pings may come first (their timer can fire before the query set is processed); then the
            // held Transition.
            let beforeTransition = after.messages.prefix { if case .transition = $0 { false } else { true } }
            #expect(beforeTransition.allSatisfy { $0 == .ping }, "\(after.messages)")
            #expect(beforeTransition.count < after.messages.count, "the held Transition arrives: \(after.messages)")
            let arrived = try #require(firstArrival.withLock { $0 })
            #expect(arrived >= unstalledAt, "nothing is sent while stalled")
        }
    }

    @Test func sharedEvaluationsNeverMixCallers() async throws {
        try await withDeployment { deployment in
            let add = ClientMessage.modifyQuerySet(
                .init(
                    baseVersion: 0, newVersion: 1,
                    modifications: [
                        .add(.init(queryId: 0, udfPath: "conformance:whoami"))
                    ])
            ).jsonText
            let anonymous = try await syncExchange(deployment, send: [connectFrame(), add]) { !$0.isEmpty }
            let admin = try await syncExchange(
                deployment,
                send: [
                    connectFrame(), ClientMessage.authenticate(.init(baseVersion: 0, token: .admin("k"))).jsonText, add,
                ]
            ) { $0.count >= 2 }
            guard case .transition(let a)? = anonymous.messages.first, case .transition(let b)? = admin.messages.last
            else {
                Issue.record("\(anonymous.messages) \(admin.messages)"); return
            }
            #expect(
                a.modifications == [
                    .queryUpdated(queryId: 0, value: ["identity": .null, "isAdmin": false], logLines: [], journal: nil)
                ])
            #expect(
                b.modifications == [
                    .queryUpdated(queryId: 0, value: ["identity": .null, "isAdmin": true], logLines: [], journal: nil)
                ])
        }
    }

    @Test func restartKeepsDataAndClientsReconnect() async throws {
        try await withDeployment { deployment in
            _ = try deployment.mutation("messages:send", ["body": "before restart"])
            let before = deployment.latestTimestamp
            let port = deployment.port
            try await deployment.restart()
            #expect(deployment.port == port)
            let result = try await syncExchange(
                deployment,
                send: [
                    connectFrame(maxObserved: before),
                    ClientMessage.modifyQuerySet(
                        .init(
                            baseVersion: 0, newVersion: 1,
                            modifications: [
                                .add(.init(queryId: 0, udfPath: "messages:list"))
                            ])
                    ).jsonText,
                ]
            ) { !$0.isEmpty }
            guard case .transition(let t)? = result.messages.first,
                case .queryUpdated(_, .array(let items), _, _)? = t.modifications.first
            else {
                Issue.record("\(result.messages)"); return
            }
            #expect(items.contains { $0["body"] == "before restart" })
            #expect(t.endVersion.ts >= before)
        }
    }
}
