import Clocks
import ConvexGateway
import ConvexValues
import Foundation
import TestSupport
import Testing

/// `/subscribe?sub.<id>=…` end to end: raw HTTP streams → gateway → Convex client → local deployment.
@Suite(.timeLimit(.minutes(5)))
struct MultiSubscriptionEndToEndTests {
    /// A `/subscribe?sub.<id>=…` target (with `batch`, the `GET /query?q.<id>=…` of the same functions).
    static func query(_ subscriptions: [(id: String, function: String, args: String?)], batch: Bool = false) -> String {
        (batch ? "/query?" : "/subscribe?")
            + subscriptions.map { subscription in
                var item = "\(batch ? "q" : "sub").\(subscription.id)=\(subscription.function)"
                if let args = subscription.args {
                    item +=
                        "&args.\(subscription.id)="
                        + args.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                }
                return item
            }.joined(separator: "&")
    }

    /// The changes of a transition event, in order: each subscription's id with its change (`value`, or `error`).
    func changes(_ event: ReceivedEvent) throws -> [(sub: String, change: ConvexValue)] {
        guard event.event == "transition" else { throw TestFailure("not a transition event: \(event)") }
        let data = try ConvexValue(plainJSON: Array(event.data.utf8))
        guard case .string(let ts)? = data["ts"], UInt64(ts) != nil, case .array(let changes)? = data["changes"] else {
            throw TestFailure("not a transition: \(event.data)")
        }
        return try changes.map { change in
            guard case .string(let sub)? = change["sub"] else { throw TestFailure("a change without sub: \(change)") }
            return (sub, change)
        }
    }

    /// A transition event's Convex timestamp.
    func ts(_ event: ReceivedEvent) throws -> UInt64 {
        let data = try ConvexValue(plainJSON: Array(event.data.utf8))
        guard case .string(let text)? = data["ts"], let ts = UInt64(text) else { throw TestFailure("no ts: \(event)") }
        return ts
    }

    /// The one value a transition event changes.
    func value(_ event: ReceivedEvent) throws -> (sub: String, value: ConvexValue) {
        let changes = try changes(event)
        guard changes.count == 1, let value = changes[0].change["value"] else {
            throw TestFailure("not one value: \(event.data)")
        }
        return (changes[0].sub, value)
    }

    /// The values of a transition event, by subscription.
    func values(_ event: ReceivedEvent) throws -> [String: ConvexValue] {
        var values: [String: ConvexValue] = [:]
        for (sub, change) in try changes(event) { values[sub] = change["value"] }
        return values
    }

    @Test func manySubscriptionsShareOneStreamAndEachChangeNamesItsSubscription() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = Self.query(
                (0..<12).map { ("c\($0)", "messages:list", #"{"channel":"multi-\#($0)"}"#) }
                    + [("team", "mlb:first_place_team", #"{"division":"AL Central"}"#)])
            let stream = try await h.openStream(target)
            defer { stream.close() }
            #expect(stream.head.status == 200)
            #expect(stream.head.header("Content-Type") == "text/event-stream")
            #expect(stream.head.header("Referrer-Policy") == "no-referrer")
            // Every current value from one snapshot, in one event.
            let first = try values(try #require(try await stream.nextEventAsync()))
            #expect(first.count == 13)
            #expect(first["c3"] == [])
            #expect(first["team"]?["name"] == "Guardians")

            // One change: one event, for that subscription only.
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"hi","channel":"multi-7"}"#)
            let change = try #require(try await stream.nextEventAsync())
            let (sub, value) = try value(change)
            #expect(sub == "c7")
            #expect(value[0]?["body"] == "hi")
            _ = try await h.post("/mutation/mlb:record_win", json: #"{"team":"Guardians"}"#)
            let win = try #require(try await stream.nextEventAsync())
            #expect(try self.value(win).sub == "team")
            #expect(try self.value(win).value["wins"] == 81.0)
        }
    }

    @Test func reconnectingWithLastEventIDSendsOnlyWhatChangedMeanwhile() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = Self.query([
                ("same", "messages:list", #"{"channel":"resume-same"}"#),
                ("moved", "messages:list", #"{"channel":"resume-moved"}"#),
            ])
            let stream = try await h.openStream(target)
            let last = try #require(try await stream.nextEventAsync())
            #expect(try values(last).count == 2)
            let id = try #require(last.id)
            stream.close()

            _ = try await h.post("/mutation/messages:send", json: #"{"body":"while away","channel":"resume-moved"}"#)
            let resumed = try await h.openStream(target, headers: ["Last-Event-ID": id])
            defer { resumed.close() }
            let next = try #require(try await resumed.nextEventAsync())
            #expect(try value(next).sub == "moved")
            #expect(try value(next).value[0]?["body"] == "while away")
            // Nothing for "same" until it changes.
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"now","channel":"resume-same"}"#)
            let then = try #require(try await resumed.nextEventAsync())
            #expect(try value(then).sub == "same")
        }
    }

    @Test func aFailingSubscriptionSendsItsErrorAndTheOthersCarryOn() async throws {
        try await TestGateway.run(.inProcess) { h in
            let stream = try await h.openStream(
                Self.query([("flaky", "conformance:failing", nil), ("list", "messages:list", #"{"channel":"carry"}"#)]))
            defer { stream.close() }
            #expect(try changes(try #require(try await stream.nextEventAsync())).count == 2)
            _ = try await h.post("/mutation/conformance:setFailing", json: #"{"fail":true}"#)
            let failure = try changes(try #require(try await stream.nextEventAsync()))
            #expect(failure.map(\.sub) == ["flaky"])
            #expect(failure.first?.change["error"]?["code"] == "FunctionFailed")
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"still here","channel":"carry"}"#)
            let other = try #require(try await stream.nextEventAsync())
            #expect(try value(other).sub == "list")
            _ = try await h.post("/mutation/conformance:setFailing", json: #"{"fail":false}"#)
            let recovered = try #require(try await stream.nextEventAsync())
            #expect(try value(recovered) == ("flaky", "ok"))
        }
    }

    @Test func badSubscriptionsAreRefusedBeforeTheStreamNamingTheSubscription() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.maxStreamSubscriptions = 3 }) { h in
            let unknown = try await h.get(
                Self.query([("ok", "messages:list", #"{"channel":"x"}"#), ("gone", "nothing:here", nil)]),
                headers: ["Accept": "text/event-stream"])
            #expect(unknown.status == 404)
            #expect(unknown.header("Content-Type") == "application/json")
            #expect(unknown.errorCode == "FunctionNotFound")
            #expect(unknown.text.contains("Subscription 'gone'"))
            #expect(unknown.json?["error"]?["sub"] == .string("gone"), "the subscription as a field")

            let badArgs = try await h.get(Self.query([("team", "mlb:first_place_team", #"{"division":12}"#)]))
            #expect(badArgs.status == 400)
            #expect(badArgs.text.contains("Subscription 'team'"))
            #expect(badArgs.json?["error"]?["sub"] == .string("team"))

            let tooMany = try await h.get(Self.query((0..<4).map { ("s\($0)", "messages:list", nil) }))
            #expect(tooMany.status == 400)
            #expect(tooMany.errorCode == "InvalidSubscriptions")

            let badJSON = try await h.get("/subscribe?sub.a=messages:list&args.a=%7B")
            #expect(badJSON.status == 400)
            #expect(badJSON.errorCode == "MalformedJSON")

            let post = try await h.post("/subscribe?sub.a=messages:list", json: "{}")
            #expect(post.status == 405)
        }
    }

    /// Every kind of bad subscription beside a good one, with the status and code of its refusal: whatever stage
    /// refuses it (the URL's parse, the function path, the JSON, the typed arguments, the deployment), the refusal
    /// names it in its `sub` field (`query` on a batch), so a client can drop it and keep the good one. What only the
    /// deployment refuses (`byDeployment`) is, on a batch, that query's entry under `errors` of a 200.
    static let badBesideGood: [(function: String, args: String?, status: Int, code: String, byDeployment: Bool)] = [
        ("messages.list", nil, 400, "InvalidFunctionPath", false),
        (":x", nil, 400, "InvalidFunctionPath", false),
        ("mlb::x", nil, 400, "InvalidFunctionPath", false),
        ("fn.js", nil, 404, "FunctionNotFound", true),
        ("nothing:here", nil, 404, "FunctionNotFound", true),
        ("messages:list", #"{"channel":"#, 400, "MalformedJSON", false),
        ("messages:list", "[1]", 400, "InvalidArguments", false),
        ("conformance:typed", #"{"x":1.5}"#, 400, "ArgumentValidationError", false),
        ("conformance:typed", #"{"x":9007199254740993}"#, 400, "ArgumentValidationError", false),
        ("mlb:first_place_team", #"{"division":12}"#, 400, "ArgumentValidationError", true),
    ]

    @Test func everyKindOfBadSubscriptionIsRefusedNamingItInItsSubField() async throws {
        try await TestGateway.run(.inProcess, adminKey: TypedInputTests.adminKey) { h in
            let good: (id: String, function: String, args: String?) = ("good", "messages:list", #"{"channel":"good"}"#)
            for bad in Self.badBesideGood {
                let what = "\(bad.function) \(bad.args ?? "")"
                let pair: [(id: String, function: String, args: String?)] = [good, ("bad", bad.function, bad.args)]
                let stream = try await h.get(Self.query(pair), headers: ["Accept": "text/event-stream"])
                #expect(stream.status == bad.status, "\(what): \(stream.text)")
                #expect(stream.errorCode == bad.code, "\(what): \(stream.text)")
                #expect(stream.json?["error"]?["sub"] == .string("bad"), "\(what): \(stream.text)")
                #expect(stream.text.contains("Subscription 'bad'"), "\(what): \(stream.text)")

                let batch = try await h.get(Self.query(pair, batch: true))
                if bad.byDeployment {
                    // The good query's value and the bad one's error, from one snapshot.
                    #expect(batch.status == 200, "batch \(what): \(batch.text)")
                    #expect(batch.json?["errors"]?["bad"]?["code"] == .string(bad.code), "batch \(what): \(batch.text)")
                    #expect(batch.json?["values"]?["good"] != nil, "batch \(what): \(batch.text)")
                } else {
                    #expect(batch.status == bad.status, "batch \(what): \(batch.text)")
                    #expect(batch.errorCode == bad.code, "batch \(what): \(batch.text)")
                    #expect(batch.json?["error"]?["query"] == .string("bad"), "batch \(what): \(batch.text)")
                    #expect(batch.json?["error"]?["sub"] == nil, "batch \(what): \(batch.text)")
                    #expect(batch.text.contains("Query 'bad'"), "batch \(what): \(batch.text)")
                }
            }
            // A parameter that cannot be decoded names its subscription too.
            let undecodable = try await h.get("/subscribe?sub.good=messages:list&sub.bad=messages:list&args.bad=%FF")
            #expect(undecodable.status == 400)
            #expect(undecodable.errorCode == "InvalidArguments")
            #expect(undecodable.json?["error"]?["sub"] == .string("bad"), "\(undecodable.text)")
            // An error about the whole URL names none.
            let unknownParameter = try await h.get("/subscribe?sub.good=messages:list&division=1")
            #expect(unknownParameter.status == 400)
            #expect(unknownParameter.json?["error"]?["sub"] == nil)
        }
    }

    @Test func openStreamsAreCountedOncePerConnectionAndGetHeartbeats() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.heartbeatInterval = .milliseconds(200) }) { h in
            let stream = try await h.openStream(
                Self.query([
                    ("a", "messages:list", #"{"channel":"hb-a"}"#), ("b", "messages:list", #"{"channel":"hb-b"}"#),
                ]))
            defer { stream.close() }
            _ = try await stream.nextEventAsync()
            var heartbeats = 0
            while heartbeats < 2, let block = try await stream.nextAsync() {
                if block.isComment && block.comments.contains("hb") { heartbeats += 1 }
            }
            #expect(heartbeats == 2)
            let metrics = try await h.get("/metrics")
            let open = metrics.text.split(separator: "\n").first { $0.hasPrefix("convex_gateway_sse_active_streams ") }
            #expect(open.map(String.init) == "convex_gateway_sse_active_streams 1.0", "\(metrics.text)")
        }
    }

    @Test func signedInPagesSeeTheirOwnUserAndAnExpiredTokenEndsTheWholeStream() async throws {
        // The gateway and the deployment share a test clock: the test moves it past the ticket's token's `exp`.
        let clock = TestClock<Duration>()
        let time = GatewayClock(clock)
        try await TestGateway.run(
            .inProcess,
            configure: { $0.access.authCookie = StreamTicketEndToEndTests.cookie }, clock: time
        ) { h in
            let target = Self.query([
                ("me", "conformance:whoami", nil), ("list", "messages:list", #"{"channel":"me"}"#),
            ])
            /// Reads both first events; the subject `me` names.
            func identity(_ stream: EventStreamReader) async throws -> String? {
                let first = try values(try #require(try await stream.nextEventAsync()))
                #expect(first.count == 2)
                if case .string(let named)? = first["me"]?["identity"]?["subject"] { return named }
                return nil
            }
            let cookie =
                "\(StreamTicketEndToEndTests.cookie)=\(StreamTicketEndToEndTests.jwt("ada", now: time.wallSeconds))"
            let byCookie = try await h.openStream(target, headers: ["Cookie": cookie])
            defer { byCookie.close() }
            #expect(try await identity(byCookie) == "ada")

            // A ticket of a token that expires in 60 s: the stream sees its user, then (the clock moved past `exp`)
            // one error without `sub`, then its end.
            let brief = StreamTicketEndToEndTests.jwt("brief", expiresIn: 60, now: time.wallSeconds)
            let minted = try await h.request("POST", "/stream-tickets", headers: ["Authorization": "Bearer \(brief)"])
            let ticket = try StreamTicketEndToEndTests.ticket(from: minted)
            let byTicket = try await h.openStream(target + "&ticket=\(ticket)")
            defer { byTicket.close() }
            #expect(try await identity(byTicket) == "brief")
            let error = try #require(
                try await clock.advance(by: .seconds(61), until: { try await byTicket.nextEventAsync() }))
            #expect(error.event == "fatal")
            let data = try ConvexValue(plainJSON: Array(error.data.utf8))
            #expect(data["sub"] == nil)
            #expect(data["error"]?["code"] == "Unauthenticated")
            #expect(try await byTicket.nextEventAsync() == nil, "the stream ends after the error")
            // The cookie user's stream carried on.
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"still","channel":"me"}"#)
            let next = try #require(try await byCookie.nextEventAsync())
            #expect(try value(next).sub == "list")
        }
    }

    @Test func oneMutationThatChangesTwoSubscriptionsIsOneEvent() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = Self.query([
                ("leader", "mlb:first_place_team", #"{"division":"AL Central"}"#),
                ("teams", "mlb:teams", #"{"division":"AL Central"}"#),
            ])
            let stream = try await h.openStream(target)
            defer { stream.close() }
            let first = try #require(try await stream.nextEventAsync())
            let firstTS = try ts(first)
            #expect(try values(first).count == 2)
            _ = try await h.post("/mutation/mlb:record_win", json: #"{"team":"Guardians"}"#)
            let event = try #require(try await stream.nextEventAsync())
            let changed = try values(event)
            #expect(changed.count == 2, "both changes of the mutation in one event: \(event.data)")
            #expect(changed["leader"]?["wins"] == 81.0)
            guard case .array(let rows)? = changed["teams"] else { throw TestFailure("no list: \(event.data)") }
            #expect(rows.first { $0["name"] == "Guardians" }?["wins"] == 81.0, "the list is of the leader's snapshot")
            #expect(try ts(event) > firstTS)
        }
    }

    @Test func tenSubscriptionsOfWhichAMutationChangesThreeGetOneEventWithThreeChanges() async throws {
        try await TestGateway.run(.inProcess) { h in
            let subscriptions: [(id: String, function: String, args: String?)] =
                [
                    ("leader", "mlb:first_place_team", #"{"division":"AL Central"}"#),
                    ("division", "mlb:teams", #"{"division":"AL Central"}"#),
                    ("all", "mlb:teams", nil),
                    ("east", "mlb:first_place_team", #"{"division":"AL East"}"#),
                    ("west", "mlb:teams", #"{"division":"NL West"}"#),
                ] + (0..<5).map { ("m\($0)", "messages:list", #"{"channel":"ten-\#($0)"}"#) }
            let stream = try await h.openStream(Self.query(subscriptions))
            defer { stream.close() }
            #expect(try changes(try #require(try await stream.nextEventAsync())).count == 10)
            _ = try await h.post("/mutation/mlb:record_win", json: #"{"team":"Guardians"}"#)
            let event = try #require(try await stream.nextEventAsync())
            #expect(try changes(event).map(\.sub) == ["leader", "division", "all"])
            // The next change is of one subscription only.
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"hi","channel":"ten-3"}"#)
            #expect(try value(try #require(try await stream.nextEventAsync())).sub == "m3")
        }
    }
}
