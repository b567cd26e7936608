import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@Suite struct ServerMessageTests {
    @Test func observedTransitionDecodes() throws {
        let m = try ServerMessage(
            json:
                #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[{"type":"QueryUpdated","queryId":0,"value":{"a":{"$integer":"BQAAAAAAAAA="}},"logLines":[],"journal":null}]}"#
        )
        #expect(
            m
                == .transition(
                    .init(
                        startVersion: .initial,
                        endVersion: StateVersion(querySet: 1, identity: 0, ts: ConvexTimestamp(nanoseconds: 1)),
                        modifications: [.queryUpdated(queryId: 0, value: ["a": .int64(5)], logLines: [], journal: nil)])
                ))
    }

    @Test func observedMutationResponseDecodes() throws {
        let m = try ServerMessage(
            json:
                #"{"type":"MutationResponse","requestId":0,"success":true,"result":{"ok":true},"ts":"CgAAAAAAAAA=","logLines":[]}"#
        )
        #expect(
            m
                == .mutationResponse(
                    .init(requestId: 0, result: .success(["ok": true]), ts: ConvexTimestamp(nanoseconds: 10))))
        let failure = try ServerMessage(
            json:
                #"{"type":"MutationResponse","requestId":1,"success":false,"result":"boom","ts":null,"logLines":["[LOG] 'x'"],"errorData":null}"#
        )
        #expect(
            failure
                == .mutationResponse(
                    .init(
                        requestId: 1, result: .failure(message: "boom", errorData: .null), ts: nil,
                        logLines: ["[LOG] 'x'"])))
    }

    @Test func missingLogLinesIsAnError() {
        #expect {
            try ServerMessage(
                json:
                    #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[{"type":"QueryUpdated","queryId":0,"value":1.0}]}"#
            )
        } throws: { error in
            let e = error as? SyncProtocolError
            return e?.code == .missingField && e?.message == "missing field `modifications[0].logLines`"
        }
    }

    @Test func unknownServerTypeListsVariants() {
        do {
            _ = try ServerMessage(json: #"{"type":"SomethingNew"}"#)
            Issue.record("decoded an unknown type")
        } catch {
            #expect(
                error.message
                    == "unknown variant `SomethingNew`, expected one of `Transition`, `MutationResponse`, `ActionResponse`, `FatalError`, `AuthError`, `TransitionChunk`, `Ping`"
            )
        }
    }

    @Test func encodedTransitionHasTheRealServerShape() throws {
        let t = ServerMessage.transition(
            .init(
                startVersion: .initial,
                endVersion: StateVersion(querySet: 1, identity: 0, ts: ConvexTimestamp(nanoseconds: 1)),
                modifications: [
                    .queryUpdated(
                        queryId: 0, value: ["wins": .int64(5), "pct": 0.5], logLines: ["[LOG] 'hi'"], journal: nil)
                ],
                clientClockSkew: -5, serverTs: 1_700_000_000_000_000_000))
        #expect(
            t.jsonText
                == #"{"type":"Transition","startVersion":{"querySet":0,"identity":0,"ts":"AAAAAAAAAAA="},"endVersion":{"querySet":1,"identity":0,"ts":"AQAAAAAAAAA="},"modifications":[{"type":"QueryUpdated","queryId":0,"value":{"pct":0.5,"wins":{"$integer":"BQAAAAAAAAA="}},"logLines":["[LOG] 'hi'"],"journal":null}],"clientClockSkew":-5,"serverTs":1700000000000000000}"#
        )
        #expect(try ServerMessage(json: t.json) == t)
    }

    @Test func encodedResponses() {
        #expect(
            ServerMessage.mutationResponse(
                .init(requestId: 0, result: .success(["ok": true]), ts: ConvexTimestamp(nanoseconds: 10))
            ).jsonText
                == #"{"type":"MutationResponse","requestId":0,"success":true,"result":{"ok":true},"ts":"CgAAAAAAAAA=","logLines":[]}"#
        )
        #expect(
            ServerMessage.mutationResponse(
                .init(requestId: 2, result: .failure(message: "bad", errorData: ["code": 1.0]), ts: nil)
            ).jsonText
                == #"{"type":"MutationResponse","requestId":2,"success":false,"result":"bad","ts":null,"logLines":[],"errorData":{"code":1.0}}"#
        )
        #expect(
            ServerMessage.actionResponse(.init(requestId: 0, result: .success(.null))).jsonText
                == #"{"type":"ActionResponse","requestId":0,"success":true,"result":null,"logLines":[]}"#)
        #expect(ServerMessage.ping.jsonText == #"{"type":"Ping"}"#)
        #expect(
            ServerMessage.fatalError("BaseVersionMismatch").jsonText
                == #"{"type":"FatalError","error":"BaseVersionMismatch"}"#)
        #expect(
            ServerMessage.authError(.init(error: "bad token", baseVersion: 0, authUpdateAttempted: true)).jsonText
                == #"{"type":"AuthError","error":"bad token","baseVersion":0,"authUpdateAttempted":true}"#)
    }

    @Test func serverMessagesRoundTrip() throws {
        let messages: [ServerMessage] = [
            .transition(
                .init(
                    startVersion: .initial, endVersion: .init(querySet: 2, identity: 1, ts: .init(nanoseconds: 99)),
                    modifications: [
                        .queryFailed(queryId: 1, errorMessage: "boom", logLines: [], journal: nil, errorData: nil),
                        .queryFailed(
                            queryId: 2, errorMessage: "app", logLines: ["l"], journal: "j", errorData: ["x": .int64(1)]),
                        .queryRemoved(queryId: 3),
                    ], clientClockSkew: nil, serverTs: nil)),
            .transitionChunk(.init(chunk: "{\"ty", partNumber: 0, totalParts: 2, transitionId: "100")),
            .actionResponse(
                .init(requestId: 4, result: .failure(message: "e", errorData: nil), logLines: ["[ERROR] 'x'"])),
            .authError(.init(error: "expired", baseVersion: nil, authUpdateAttempted: false)),
            .fatalError("x"),
            .ping,
        ]
        for message in messages {
            #expect(try ServerMessage(json: message.json) == message)
        }
    }
}
