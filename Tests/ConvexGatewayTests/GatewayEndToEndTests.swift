import ConvexGateway
import ConvexValues
import Foundation
import TestSupport
import Testing

/// End to end: HTTP clients on raw sockets → gateway (libmicrohttpd) → Convex client over WebSocket → local deployment.
@Suite(.timeLimit(.minutes(5)))
struct GatewayEndToEndTests {
    @Test func queryInEveryOutputMode() async throws {
        try await TestGateway.run(.inProcess) { h in
            let plain = try await h.get("/query/mlb:first_place_team?division=AL%20Central")
            #expect(plain.status == 200)
            #expect(plain.header("Content-Type") == "application/json")
            #expect(plain.text == #"{"losses":60,"name":"Guardians","uniformColors":["blue","white","red"],"wins":80}"#)

            let clean = try await h.get("/query/mlb:first_place_team?division=AL%20Central&format=clean")
            #expect(
                clean.text == #"{"losses":"60","name":"Guardians","uniformColors":["blue","white","red"],"wins":"80"}"#)

            let encoded = try await h.get(
                "/query/mlb:first_place_team?args=%7B%22division%22%3A%22AL%20Central%22%7D&format=encoded")
            #expect(encoded.text.contains(#""wins":{"$integer":"UAAAAAAAAAA="}"#))

            let posted = try await h.post("/query/mlb:first_place_team", json: #"{"division":"AL Central"}"#)
            #expect(posted.text == plain.text)
        }
    }

    @Test func echoRoundTripsEveryValueType() async throws {
        try await TestGateway.run(.inProcess) { h in
            let body =
                #"{"i":{"$integer":"BQAAAAAAAAA="},"f":1.5,"nan":{"$float":"AAAAAAAA+H8="},"nz":{"$float":"AAAAAAAAAIA="},"b":{"$bytes":"AAH/"},"s":"xé","n":null,"t":true,"a":[1,"two"],"o":{"k":{"deep":2}}}"#
            let plain = try await h.post("/mutation/echo:echoMutation", json: body)
            #expect(plain.status == 200)
            #expect(
                plain.text
                    == #"{"a":[1.0,"two"],"b":"AAH/","f":1.5,"i":5,"n":null,"nan":"NaN","nz":-0.0,"o":{"k":{"deep":2.0}},"s":"xé","t":true}"#
            )
            let encoded = try await h.post("/action/echo:echoAction?format=encoded", json: body)
            #expect(try ConvexValue(convexJSON: encoded.body) == ConvexValue(convexJSON: body))
        }
    }

    @Test func mutationThenQueryReadsItsWrite() async throws {
        try await TestGateway.run(.inProcess) { h in
            let sent = try await h.post("/mutation/messages:send", json: #"{"body":"hello","channel":"e2e"}"#)
            #expect(sent.status == 200)
            let list = try await h.get("/query/messages:list?channel=e2e")
            #expect(list.status == 200)
            #expect(list.text.contains(#""body":"hello""#))
            // curl -d sends a form content type; a JSON body is still read as JSON.
            let curlStyle = try await h.post(
                "/mutation/messages:send", json: #"{"body":"from curl","channel":"e2e"}"#,
                headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(curlStyle.status == 200)
        }
    }

    @Test func streamGetsCurrentValueThenEachChange() async throws {
        try await TestGateway.run(.inProcess) { h in
            let stream = try await h.openStream("/subscribe/mlb:first_place_team?division=AL%20East")
            defer { stream.close() }
            #expect(stream.head.status == 200)
            #expect(stream.head.header("Content-Type") == "text/event-stream")
            #expect(stream.head.header("Cache-Control") == "no-store")
            #expect(stream.head.header("X-Accel-Buffering") == "no")
            let first = try #require(try await stream.nextEventAsync())
            #expect(first.data.contains(#""name":"Orioles""#))
            #expect(first.data.contains(#""wins":85"#))
            let firstID = try #require(first.id)

            let win = try await h.post("/mutation/mlb:record_win", json: #"{"team":"Orioles"}"#)
            #expect(win.status == 200)
            let second = try #require(try await stream.nextEventAsync())
            #expect(second.data.contains(#""wins":86"#))
            let secondID = try #require(second.id)
            #expect(Self.version(secondID) > Self.version(firstID))

            // The hot path: a GET of a live subscription answers from it.
            let hot = try await h.get("/query/mlb:first_place_team?division=AL%20East")
            #expect(hot.text.contains(#""wins":86"#))
        }
    }

    @Test func queryRouteWithEventStreamAcceptHeaderStreams() async throws {
        try await TestGateway.run(.inProcess) { h in
            let stream = try await h.openStream("/query/messages:list?channel=accept")
            defer { stream.close() }
            #expect(stream.head.header("Content-Type") == "text/event-stream")
            let first = try #require(try await stream.nextEventAsync())
            #expect(first.data == "[]")
        }
    }

    @Test func lastEventIDSkipsAnUnchangedValueAndSendsAChangedOne() async throws {
        try await TestGateway.run(.inProcess) { h in
            let target = "/subscribe/messages:list?channel=resume"
            let stream = try await h.openStream(target)
            let first = try #require(try await stream.nextEventAsync())
            let id = try #require(first.id)
            stream.close()

            // Reconnect with the id: nothing until the value changes.
            let resumed = try await h.openStream(target, headers: ["Last-Event-ID": id])
            defer { resumed.close() }
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"while away","channel":"resume"}"#)
            let next = try #require(try await resumed.nextEventAsync())
            #expect(next.data.contains("while away"))

            // Reconnect with the old id after the change: the new value at once.
            let stale = try await h.openStream(target, headers: ["Last-Event-ID": id])
            defer { stale.close() }
            let immediate = try #require(try await stale.nextEventAsync())
            #expect(immediate.data.contains("while away"))
        }
    }

    @Test func heartbeatsArriveAsComments() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.heartbeatInterval = .milliseconds(200) }) { h in
            let stream = try await h.openStream("/subscribe/messages:list?channel=hb")
            defer { stream.close() }
            _ = try await stream.nextEventAsync()
            var sawHeartbeat = false
            for _ in 0..<5 {
                if let block = try await stream.nextAsync(), block.isComment, block.comments.contains("hb") {
                    sawHeartbeat = true
                    break
                }
            }
            #expect(sawHeartbeat)
        }
    }

    @Test func functionErrorsArriveAsErrorEventsAndTheStreamCarriesOn() async throws {
        try await TestGateway.run(.inProcess) { h in
            let stream = try await h.openStream("/subscribe/conformance:failing")
            defer { stream.close() }
            let ok = try #require(try await stream.nextEventAsync())
            #expect(ok.event == nil)
            _ = try await h.post("/mutation/conformance:setFailing", json: #"{"fail":true}"#)
            let failure = try #require(try await stream.nextEventAsync())
            #expect(failure.event == "failure")
            #expect(failure.data.contains(#""code":"FunctionFailed""#))
            _ = try await h.post("/mutation/conformance:setFailing", json: #"{"fail":false}"#)
            let recovered = try #require(try await stream.nextEventAsync())
            #expect(recovered.event == nil)
            #expect(recovered.data == ok.data)
        }
    }

    @Test func shutdownEndsStreamsCleanly() async throws {
        let stream = try await TestGateway.run(.inProcess) { h in
            let stream = try await h.openStream("/subscribe/messages:list?channel=bye")
            _ = try await stream.nextEventAsync()
            return stream
        }
        // The harness shut the gateway down: the stream ended with its terminating chunk.
        var ended = false
        while let block = try await stream.nextAsync() {
            _ = block
        }
        ended = true
        #expect(ended)
        stream.close()
    }

    @Test func healthReadinessMetrics() async throws {
        try await TestGateway.run(.inProcess) { h in
            let health = try await h.get("/healthz")
            #expect(health.status == 200)
            #expect(health.text == #"{"status":"ok"}"#)
            // Ready once the upstream connection is up (it opens on demand).
            var ready: TestResponse?
            #expect(
                await eventually(timeout: .seconds(30)) {
                    ready = try? await h.get("/readyz")
                    return ready?.status == 200
                })
            #expect(ready?.status == 200)
            #expect(ready?.text == #"{"status":"ready"}"#)
            _ = try await h.get("/query/messages:list")
            let metrics = try await h.get("/metrics")
            #expect(metrics.status == 200)
            #expect(
                metrics.text.contains(
                    #"convex_gateway_http_server_requests_total{route="/query/{function}",status="200"}"#))
            // Bucket bounds in seconds, labelled as Prometheus clients expect them.
            for bound in ["0.0001", "0.00025", "0.001", "1.0", "10.0", "+Inf"] {
                #expect(
                    metrics.text.contains(
                        #"convex_gateway_http_server_request_duration_seconds_bucket{route="/query/{function}",le="\#(bound)"}"#
                    ))
            }
            #expect(
                metrics.text.contains(
                    #"convex_gateway_http_server_request_duration_seconds_count{route="/query/{function}"} 1"#))
            #expect(metrics.text.contains("convex_gateway_sse_active_streams"))
            #expect(metrics.text.contains("convex_gateway_upstream_active_subscriptions"))
            #expect(metrics.text.contains("convex_gateway_upstream_reconnects_total"))
        }
    }

    static func version(_ id: String) -> UInt64 {
        UInt64(id.split(separator: "-").first ?? "") ?? 0
    }
}
