import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

/// Frames observed from the official Python client 0.8.1 (reference §4.3, §4.6, §4.8) and the shapes it accepts.
@Suite struct ClientMessageDecodingTests {
    @Test func observedInitialConnect() throws {
        let m = try ClientMessage(
            json:
                #"{"type":"Connect","sessionId":"045b80dd-9c66-4d51-a289-1aa69f8fa0fe","connectionCount":0,"lastCloseReason":"InitialConnect","clientTs":0}"#
        )
        #expect(
            m
                == .connect(
                    .init(
                        sessionId: "045b80dd-9c66-4d51-a289-1aa69f8fa0fe", connectionCount: 0,
                        lastCloseReason: "InitialConnect", maxObservedTimestamp: nil, clientTs: 0)))
    }

    @Test func observedReconnect() throws {
        let m = try ClientMessage(
            json:
                #"{"type":"Connect","sessionId":"289fd6fc-c151-4438-bd6d-136a91fd50c9","connectionCount":1,"lastCloseReason":"TestClose","maxObservedTimestamp":"AQAAAAAAAAA=","clientTs":0}"#
        )
        guard case .connect(let c) = m else { Issue.record("not a Connect"); return }
        #expect(c.connectionCount == 1)
        #expect(c.lastCloseReason == "TestClose")
        #expect(c.maxObservedTimestamp == ConvexTimestamp(nanoseconds: 1))
    }

    @Test func observedAddWithEveryValueType() throws {
        let frame =
            #"{"modifications":[{"args":[{"arr":[1.0,"a",[2.0,3.0]],"b":true,"big_safe":9007199254740992.0,"bytes":{"$bytes":"AAH/"},"f_float":1.5,"f_int":1.0,"i64":{"$integer":"BQAAAAAAAAA="},"i64neg":{"$integer":"//////////8="},"inf":{"$float":"AAAAAAAA8H8="},"n":null,"nan":{"$float":"AAAAAAAA+H8="},"negzero":{"$float":"AAAAAAAAAIA="},"ninf":{"$float":"AAAAAAAA8P8="},"obj":{"k":{"deep":2.0}},"s":"xé"}],"type":"Add","queryId":0,"udfPath":"messages:list"}],"type":"ModifyQuerySet","baseVersion":0,"newVersion":1}"#
        guard case .modifyQuerySet(let m) = try ClientMessage(json: frame) else {
            Issue.record("not a ModifyQuerySet"); return
        }
        #expect(m.baseVersion == 0 && m.newVersion == 1)
        guard case .add(let add) = m.modifications.first else { Issue.record("not an Add"); return }
        #expect(add.queryId == 0 && add.udfPath == "messages:list")
        #expect(add.args["i64"] == .int64(5))
        #expect(add.args["i64neg"] == .int64(-1))
        #expect(add.args["bytes"] == .bytes(Data([0, 1, 0xFF])))
        #expect(add.args["negzero"] == .float64(-0.0))
        #expect(add.args["inf"] == .float64(.infinity))
        #expect(add.args["f_int"] == .float64(1))
        #expect(add.args["s"] == "xé")
        #expect(add.args["n"] == .null)
        #expect(add.args["obj"] == ["k": ["deep": 2.0]])
        if case .float64(let nan)? = add.args["nan"] { #expect(nan.isNaN) } else { Issue.record("nan missing") }
    }

    @Test func observedRemove() throws {
        let m = try ClientMessage(
            json:
                #"{"modifications":[{"type":"Remove","queryId":0}],"type":"ModifyQuerySet","baseVersion":1,"newVersion":2}"#
        )
        #expect(m == .modifyQuerySet(.init(baseVersion: 1, newVersion: 2, modifications: [.remove(queryId: 0)])))
    }

    @Test func observedMutationAndAction() throws {
        let mutation = try ClientMessage(
            json:
                #"{"args":[{"body":"hi","n":{"$integer":"BwAAAAAAAAA="}}],"type":"Mutation","requestId":0,"udfPath":"messages:send"}"#
        )
        #expect(
            mutation == .mutation(.init(requestId: 0, udfPath: "messages:send", args: ["body": "hi", "n": .int64(7)])))
        let action = try ClientMessage(
            json: #"{"args":[{"x":1.0}],"type":"Action","requestId":0,"udfPath":"actions:run"}"#)
        #expect(action == .action(.init(requestId: 0, udfPath: "actions:run", args: ["x": 1.0])))
        let empty = try ClientMessage(json: #"{"args":[{}],"type":"Action","requestId":3,"udfPath":"a:b"}"#)
        #expect(empty == .action(.init(requestId: 3, udfPath: "a:b", args: [:])))
    }

    @Test func observedAuthenticateSequence() throws {
        #expect(
            try ClientMessage(
                json: #"{"type":"Authenticate","baseVersion":0,"tokenType":"User","value":"header.payload.sig"}"#)
                == .authenticate(.init(baseVersion: 0, token: .user("header.payload.sig"))))
        #expect(
            try ClientMessage(
                json: #"{"type":"Authenticate","baseVersion":1,"tokenType":"Admin","value":"admin-key-xyz"}"#)
                == .authenticate(.init(baseVersion: 1, token: .admin("admin-key-xyz"))))
        #expect(
            try ClientMessage(json: #"{"type":"Authenticate","baseVersion":2,"tokenType":"None"}"#)
                == .authenticate(.init(baseVersion: 2, token: .none)))
    }

    @Test(arguments: ["impersonating", "acting_as"])
    func adminActingAs(key: String) throws {
        let m = try ClientMessage(
            json: #"{"type":"Authenticate","baseVersion":0,"tokenType":"Admin","value":"k","\#(key)":{"subject":"u1"}}"#
        )
        #expect(m == .authenticate(.init(baseVersion: 0, token: .admin("k", actingAs: ["subject": "u1"]))))
    }

    @Test func eventIsDecoded() throws {
        let m = try ClientMessage(json: #"{"type":"Event","eventType":"ClientConnect","event":{"marks":[]}}"#)
        #expect(m == .event(.init(eventType: "ClientConnect", event: ["marks": []])))
    }

    @Test(arguments: [
        (#"{"type":"Nope"}"#, SyncProtocolError.Code.unknownType, "type"),
        (#"{"sessionId":"x"}"#, .missingField, "type"),
        (#"{"type":"Connect","connectionCount":0}"#, .missingField, "sessionId"),
        (#"{"type":"Connect","sessionId":"s","connectionCount":-1}"#, .invalidField, "connectionCount"),
        (#"{"type":"Connect","sessionId":"s","connectionCount":1.5}"#, .invalidField, "connectionCount"),
        (
            #"{"type":"Connect","sessionId":"s","connectionCount":0,"maxObservedTimestamp":"AQ=="}"#, .invalidField,
            "maxObservedTimestamp"
        ),
        (
            #"{"type":"ModifyQuerySet","baseVersion":0,"newVersion":1,"modifications":[{"type":"Move","queryId":0}]}"#,
            .unknownType, "modifications[0].type"
        ),
        (
            #"{"type":"ModifyQuerySet","baseVersion":0,"newVersion":1,"modifications":[{"type":"Add","queryId":0,"udfPath":"a:b","args":{}}]}"#,
            .invalidField, "modifications[0].args"
        ),
        (
            #"{"type":"ModifyQuerySet","baseVersion":0,"newVersion":1,"modifications":[{"type":"Add","queryId":0,"args":[{}]}]}"#,
            .missingField, "modifications[0].udfPath"
        ),
        (#"{"type":"Mutation","requestId":0,"udfPath":"a:b","args":[{},{}]}"#, .invalidField, "args"),
        (#"{"type":"Authenticate","baseVersion":0,"tokenType":"Root","value":"x"}"#, .unknownType, "tokenType"),
        (#"{"type":"Authenticate","baseVersion":0,"tokenType":"User"}"#, .missingField, "value"),
    ])
    func preciseErrors(frame: String, code: SyncProtocolError.Code, field: String) {
        #expect {
            try ClientMessage(json: frame)
        } throws: { error in
            guard let e = error as? SyncProtocolError else { return false }
            return e.code == code && e.field == field
        }
    }

    @Test func deepNestingIsRejectedBeforeParsing() {
        #expect {
            try ClientMessage(json: String(repeating: "[", count: 200_000))
        } throws: { error in
            (error as? SyncProtocolError)?.code == .invalidValue
        }
        #expect(throws: SyncProtocolError.self) {
            try ServerMessage(json: #"{"type":"Ping","x":"# + String(repeating: "{\"a\":", count: 5000))
        }
    }

    @Test func invalidJSONAndNonObjects() {
        #expect(throws: SyncProtocolError.self) { try ClientMessage(json: "{not json") }
        #expect(throws: SyncProtocolError.self) { try ClientMessage(json: "[1,2]") }
        #expect(throws: SyncProtocolError.self) { try ClientMessage(json: "") }
    }

    @Test func unknownTypeMessageListsVariants() {
        do {
            _ = try ClientMessage(json: #"{"type":"SomethingNew"}"#)
            Issue.record("decoded an unknown type")
        } catch {
            #expect(error.message.hasPrefix("unknown variant `SomethingNew`, expected one of `Connect`"))
        }
    }

    @Test func oversizeArgsAreRejected() {
        var nested: ConvexValue = 1.0
        for _ in 0..<70 { nested = [nested] }
        let frame = ClientMessage.mutation(.init(requestId: 1, udfPath: "a:b", args: ["deep": nested])).jsonText
        #expect {
            try ClientMessage(json: frame)
        } throws: { error in
            (error as? SyncProtocolError)?.code == .invalidValue
        }
    }

    @Test func clientMessagesRoundTrip() throws {
        let messages: [ClientMessage] = [
            .connect(
                .init(
                    sessionId: "s", connectionCount: 2, lastCloseReason: "InactiveServer",
                    maxObservedTimestamp: ConvexTimestamp(nanoseconds: 1_700_000_000_000_000_123), clientTs: 0)),
            .connect(.init(sessionId: "s", connectionCount: 0, lastCloseReason: nil)),
            .modifyQuerySet(
                .init(
                    baseVersion: 3, newVersion: 4,
                    modifications: [
                        .add(
                            .init(
                                queryId: 7, udfPath: "dir/m.js:f", args: ["a": .int64(-2), "b": .bytes(Data([1]))],
                                journal: "j")),
                        .remove(queryId: 1),
                    ])),
            .mutation(.init(requestId: 9, udfPath: "m:f", args: ["x": .float64(.nan)])),
            .action(.init(requestId: 10, udfPath: "m", args: [:], componentPath: "c")),
            .authenticate(.init(baseVersion: 0, token: .admin("key", actingAs: ["subject": "s"]))),
            .authenticate(.init(baseVersion: 1, token: .user("a.b.c"))),
            .authenticate(.init(baseVersion: 2, token: .none)),
            .event(.init(eventType: "ClientConnect", event: ["n": 1.0])),
        ]
        for message in messages {
            #expect(try ClientMessage(json: message.json) == message)
        }
    }
}
