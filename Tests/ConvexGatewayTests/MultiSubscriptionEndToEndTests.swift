import ConvexGateway
import ConvexValues
import Foundation
import TestSupport
import Testing

/// `/subscribe?sub.<id>=…` end to end: raw HTTP streams → gateway → Convex client → local deployment.
@Suite(.timeLimit(.minutes(2)))
struct MultiSubscriptionEndToEndTests {
    static func query(_ subscriptions: [(id: String, function: String, args: String?)]) -> String {
        "/subscribe?"
            + subscriptions.map { subscription in
                var item = "sub.\(subscription.id)=\(subscription.function)"
                if let args = subscription.args {
                    item +=
                        "&args.\(subscription.id)="
                        + args.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                }
                return item
            }.joined(separator: "&")
    }

    func value(_ event: ReceivedEvent) throws -> (sub: String, value: ConvexValue) {
        let data = try ConvexValue(plainJSON: Array(event.data.utf8))
        guard case .string(let sub)? = data["sub"], let value = data["value"] else {
            throw TestFailure("not a value event: \(event)")
        }
        return (sub, value)
    }

    @Test func manySubscriptionsShareOneStreamAndEachChangeNamesItsSubscription() async throws {
        try await GatewayHarness.run { h in
            let target = Self.query(
                (0..<12).map { ("c\($0)", "messages:list", #"{"channel":"multi-\#($0)"}"#) }
                    + [("team", "mlb:first_place_team", #"{"division":"AL Central"}"#)])
            let stream = try await h.openStream(target)
            defer { stream.close() }
            #expect(stream.head.status == 200)
            #expect(stream.head.header("Content-Type") == "text/event-stream")
            #expect(stream.head.header("Referrer-Policy") == "no-referrer")
            var first: [String: ConvexValue] = [:]
            for _ in 0..<13 {
                let event = try #require(try await stream.nextEventAsync())
                #expect(event.event == "value")
                let (sub, value) = try value(event)
                first[sub] = value
            }
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
        try await GatewayHarness.run { h in
            let target = Self.query([
                ("same", "messages:list", #"{"channel":"resume-same"}"#),
                ("moved", "messages:list", #"{"channel":"resume-moved"}"#),
            ])
            let stream = try await h.openStream(target)
            _ = try await stream.nextEventAsync()
            let last = try #require(try await stream.nextEventAsync())
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
        try await GatewayHarness.run { h in
            let stream = try await h.openStream(
                Self.query([("flaky", "conformance:failing", nil), ("list", "messages:list", #"{"channel":"carry"}"#)]))
            defer { stream.close() }
            _ = try await stream.nextEventAsync()
            _ = try await stream.nextEventAsync()
            _ = try await h.post("/mutation/conformance:setFailing", json: #"{"fail":true}"#)
            let failure = try #require(try await stream.nextEventAsync())
            #expect(failure.event == "error")
            let data = try ConvexValue(plainJSON: Array(failure.data.utf8))
            #expect(data["sub"] == "flaky")
            #expect(data["error"]?["code"] == "FunctionFailed")
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"still here","channel":"carry"}"#)
            let other = try #require(try await stream.nextEventAsync())
            #expect(try value(other).sub == "list")
            _ = try await h.post("/mutation/conformance:setFailing", json: #"{"fail":false}"#)
            let recovered = try #require(try await stream.nextEventAsync())
            #expect(recovered.event == "value")
            #expect(try value(recovered) == ("flaky", "ok"))
        }
    }

    @Test func badSubscriptionsAreRefusedBeforeTheStreamNamingTheSubscription() async throws {
        try await GatewayHarness.run(configure: { $0.maxStreamSubscriptions = 3 }) { h in
            let unknown = try await h.get(
                Self.query([("ok", "messages:list", #"{"channel":"x"}"#), ("gone", "nothing:here", nil)]),
                headers: ["Accept": "text/event-stream"])
            #expect(unknown.status == 404)
            #expect(unknown.header("Content-Type") == "application/json")
            #expect(unknown.errorCode == "FunctionNotFound")
            #expect(unknown.text.contains("Subscription 'gone'"))

            let badArgs = try await h.get(Self.query([("team", "mlb:first_place_team", #"{"division":12}"#)]))
            #expect(badArgs.status == 400)
            #expect(badArgs.text.contains("Subscription 'team'"))

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

    @Test func openStreamsAreCountedOncePerConnectionAndGetHeartbeats() async throws {
        try await GatewayHarness.run(configure: { $0.heartbeatInterval = .milliseconds(200) }) { h in
            let stream = try await h.openStream(
                Self.query([
                    ("a", "messages:list", #"{"channel":"hb-a"}"#), ("b", "messages:list", #"{"channel":"hb-b"}"#),
                ]))
            defer { stream.close() }
            _ = try await stream.nextEventAsync()
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
        try await GatewayHarness.run(configure: { $0.access.authCookie = StreamTicketEndToEndTests.cookie }) { h in
            let target = Self.query([
                ("me", "conformance:whoami", nil), ("list", "messages:list", #"{"channel":"me"}"#),
            ])
            /// Reads both first events; the subject `me` names.
            func identity(_ stream: EventStreamReader) async throws -> String? {
                var subject: String?
                for _ in 0..<2 {
                    let event = try #require(try await stream.nextEventAsync())
                    let (sub, value) = try value(event)
                    if sub == "me", case .string(let named)? = value["identity"]?["subject"] { subject = named }
                }
                return subject
            }
            let cookie = "\(StreamTicketEndToEndTests.cookie)=\(StreamTicketEndToEndTests.jwt("ada"))"
            let byCookie = try await h.openStream(target, headers: ["Cookie": cookie])
            defer { byCookie.close() }
            #expect(try await identity(byCookie) == "ada")

            // A ticket of a token that expires in 6 s: the stream sees its user, then one error without `sub`, then
            // its end.
            let minted = try await h.request(
                "POST", "/stream-tickets",
                headers: ["Authorization": "Bearer \(StreamTicketEndToEndTests.jwt("brief", expiresIn: 6))"])
            let ticket = try StreamTicketEndToEndTests.ticket(from: minted)
            let byTicket = try await h.openStream(target + "&ticket=\(ticket)")
            defer { byTicket.close() }
            #expect(try await identity(byTicket) == "brief")
            let error = try #require(try await byTicket.nextEventAsync())
            #expect(error.event == "error")
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
}
