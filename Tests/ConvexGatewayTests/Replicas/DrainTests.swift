import Clocks
import ConvexGateway
import ConvexLocal
import Foundation
import OffThePool
import Synchronization
import TestSupport
import Testing

/// How a gateway stops (SIGTERM, ``Gateway/shutdown()``) so that a load balancer in front loses nothing: out of
/// rotation first, then the port closes, the streams end with a `retry:` for their clients, and the mutations and
/// actions already running get their answers.
@Suite("Draining a gateway", .timeLimit(.minutes(5)))
struct DrainTests {
    @Test("during its drain delay a stopping gateway fails /readyz and serves everything else")
    func readinessFailsFirst() async throws {
        let clock = TestClock<Duration>()
        try await TestGateway.run(.inProcess, configure: { $0.drainDelay = .seconds(5) }, clock: GatewayClock(clock)) {
            h in
            #expect(await eventually { (try? await h.get("/readyz"))?.status == 200 })
            let gateway = h.gateway
            let stopped = Mutex(false)
            let stopping = Task {
                await gateway.shutdown()
                stopped.withLock { $0 = true }
            }
            #expect(await eventually { (try? await h.get("/readyz"))?.errorCode == "ShuttingDown" })
            let ready = try await h.get("/readyz")
            #expect(ready.status == 503)
            #expect(try await h.get("/healthz").status == 200)
            let sent = try await h.post("/mutation/messages:send", json: #"{"body":"while draining"}"#)
            #expect(sent.status == 200, "\(sent.text)")
            let stream = try await h.openStream("/subscribe/messages:list")
            #expect(stream.head.status == 200)
            // The delay is over: the stream ends with a short retry for its client, and the port closes. (The clock
            // moves until the gateway has stopped: its sleep may not have begun when the first move comes.)
            #expect(
                await eventually {
                    await clock.advance(by: .seconds(5))
                    return stopped.withLock { $0 }
                })
            var retry: Int?
            while let event = try await stream.nextAsync() {
                if let value = event.retry { retry = value }
            }
            let delay = try #require(retry, "no retry: before the stream's end")
            #expect((50...500).contains(delay), "the stream's last retry: \(delay) ms")
            await stopping.value
            #expect((try? await h.get("/healthz")) == nil, "the port still accepts after shutdown")
        }
    }

    @Test("an action running when the gateway stops gets its answer; one that outlasts the grace period gets 502")
    func runningCallsFinish() async throws {
        let started = Mutex(0)
        let gate = AsyncStream<Void>.makeStream()
        let functions = FunctionRegistry()
        functions.action("drain:held", args: [:]) { _, _ in
            started.withLock { $0 += 1 }
            for await _ in gate.stream { break }
            return .string("finished")
        }
        try await TestGateway.run(
            .inProcess,
            configure: { $0.shutdownGracePeriod = .seconds(30) }, functions: functions
        ) { h in
            let call = Task { try await h.post("/action/drain:held", json: "{}") }
            #expect(await eventually { started.withLock { $0 } == 1 })
            // A connection the gateway has accepted (it answered once), for a request after shutdown began.
            let open = try RawConnection(port: h.port)
            defer { open.close() }
            let first = try await blocking {
                try open.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                return try open.readResponse()
            }
            #expect(first.status == 200)
            let gateway = h.gateway
            let stopping = Task { await gateway.shutdown() }
            // Once the gateway has begun to stop, a new request on a connection already open is refused before it
            // runs: 503, safe to send again (elsewhere).
            #expect(
                await eventually {
                    let status = try? await blocking {
                        try open.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                        return try open.readResponse().status
                    }
                    return status == 503
                })
            gate.continuation.yield()
            let answer = try await call.value
            #expect(answer.status == 200, "\(answer.text)")
            #expect(answer.text == #""finished""#)
            await stopping.value
        }

        let never = FunctionRegistry()
        never.action("drain:never", args: [:]) { _, _ in
            started.withLock { $0 += 1 }
            for await _ in AsyncStream<Void>.makeStream().stream {}
            return .null
        }
        try await TestGateway.run(
            .inProcess,
            configure: { $0.shutdownGracePeriod = .milliseconds(300) }, functions: never
        ) { h in
            let call = Task { try await h.post("/action/drain:never", json: "{}") }
            #expect(await eventually { started.withLock { $0 } == 2 })
            await h.gateway.shutdown()
            let answer = try await call.value
            #expect(answer.status == 502)
            #expect(answer.errorCode == "OutcomeUnknown", "\(answer.text)")
        }
    }
}
