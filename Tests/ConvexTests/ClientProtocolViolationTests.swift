import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Convex

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientProtocolViolationTests {
    /// A valid Transition answering query 0 on a fresh socket.
    static func answer(querySet: UInt32, value: ConvexValue) -> String {
        ServerMessage.transition(
            .init(
                startVersion: .initial,
                endVersion: StateVersion(querySet: querySet, identity: 0, ts: ConvexTimestamp(nanoseconds: 10)),
                modifications: [.queryUpdated(queryId: 0, value: value, logLines: [], journal: nil)])
        ).jsonText
    }

    static let violations: [(name: String, frame: String)] = [
        ("unknown message type", #"{"type":"SomethingNew"}"#),
        (
            "wrong start version",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"6AMAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"6AMAAAAAAAA="},"modifications":[]}"#
        ),
        (
            "undecodable value",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[{"type":"QueryUpdated","queryId":0,"value":{"$integer":"AQ"},"logLines":[]}]}"#
        ),
        (
            "missing logLines",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[{"type":"QueryUpdated","queryId":0,"value":1.0}]}"#
        ),
        ("not JSON", "this is not json"),
        (
            "query set version never sent",
            #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":9,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[]}"#
        ),
        ("FatalError", #"{"type":"FatalError","error":"test fatal"}"#),
    ]

    @Test(arguments: violations)
    func brokenServerMessageMakesTheClientReconnect(name: String, frame: String) async throws {
        // Generous deadlines: the first socket must end by the violation, not by a slow open on half a core, and the
        // query waits for a reconnect (20 s did not do beside a container build on a loaded machine).
        let configuration = ConvexClientConfiguration(
            callTimeout: .seconds(45), connectTimeout: .seconds(60), initialBackoff: .milliseconds(10))
        try await ScriptedSyncServer.with(script: { socket, message, send in
            guard case .modifyQuerySet(let modify) = message else { return }
            if socket == 0 {
                try await send(frame)
            } else {
                try await send(Self.answer(querySet: modify.newVersion, value: "recovered"))
            }
        }) { url, server in
            try await ConvexClient.withClient(deploymentUrl: url, configuration: configuration) {
                (client) async throws in
                #expect(try await client.query("m:f") == "recovered", "\(name)")
            }
            #expect(server.socketCount >= 2)
            // The second socket's Connect names why the first ended, under the same session.
            let connects = server.receivedMessages.compactMap { entry -> (Int, ClientMessage.Connect)? in
                if case .connect(let c) = entry.message { return (entry.socket, c) }
                return nil
            }
            #expect(connects.count >= 2)
            if connects.count >= 2 {
                #expect(connects[0].1.lastCloseReason == "InitialConnect")
                #expect(connects[1].1.lastCloseReason != "InitialConnect")
                #expect(connects[0].1.sessionId == connects[1].1.sessionId)
            }
        }
    }

    @Test func handshakeCarriesTheConvexClientHeader() async throws {
        try await ScriptedSyncServer.with(script: { _, message, send in
            guard case .modifyQuerySet(let modify) = message else { return }
            try await send(Self.answer(querySet: modify.newVersion, value: 1.0))
        }) { url, server in
            try await ConvexClient.withClient(deploymentUrl: url) { (client) async throws in
                #expect(try await client.query("m:f") == 1.0)
            }
            #expect(server.convexClientHeaders == ["swift-linux-0.1.0"])
        }
    }
}
