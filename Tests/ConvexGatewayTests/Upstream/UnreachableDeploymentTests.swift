import ConvexGateway
import ConvexLocal
import Foundation
import TestSupport
import Testing

/// Fail fast, recover alone: while the deployment is known unreachable, requests are refused at once with
/// `Retry-After` (none waits for a connect attempt of its own), `/readyz` says why, and once the deployment is back the
/// gateway's connections find it by themselves.
@Suite("Unreachable deployment", .timeLimit(.minutes(3)))
struct UnreachableDeploymentTests {
    /// The message of the refusal made before any wait (`GatewayError.deploymentUnreachable`); a request that waited
    /// for its connection and gave up gets another.
    static let refusedAtOnce = "the gateway's last attempt to connect failed and it keeps trying"

    @Test("down: 20 requests refused at once with Retry-After; back: served again without a restart")
    func failFastThenRecover() async throws {
        let port = try portBelowTheEphemeralRange()
        try await TestGateway.run(.inProcess, deploymentURL: "http://127.0.0.1:\(port)") { h in
            // Until a connection has failed, the deployment is not known to be down; /readyz finds out.
            let known = try await eventually(timeout: .seconds(30)) {
                let ready = try await h.get("/readyz")
                return ready.status == 503 && ready.text.contains("connection refused")
            }
            #expect(known, "/readyz never said why the gateway is not ready")
            let ready = try await h.get("/readyz")
            #expect(ready.text.contains("Not ready: the Convex deployment is unreachable"), "\(ready.text)")
            #expect(!ready.text.contains("\(port)"), "the address is the log's, not the caller's")

            for index in 0..<20 {
                let answer =
                    index % 2 == 0
                    ? try await h.get("/query/echo:echo?i=\(index)")
                    : try await h.post("/mutation/messages:send", json: #"{"body":"x","channel":"c"}"#)
                #expect(answer.status == 503)
                #expect(answer.errorCode == "UpstreamUnavailable")
                #expect(answer.header("Retry-After") == "1")
                #expect(answer.text.contains(Self.refusedAtOnce), "request \(index) waited: \(answer.text)")
            }

            // The deployment comes back on the same port: the connection retrying in the background finds it.
            let deployment = try await LocalDeployment.start(port: port, logger: quietLogger)
            do {
                let served = try await eventually(timeout: .seconds(30)) {
                    try await h.get("/query/echo:echo?back=1").status == 200
                }
                #expect(served, "the gateway did not serve again once the deployment was back")
                let ready = try await h.get("/readyz")
                let sent = try await h.post("/mutation/messages:send", json: #"{"body":"x","channel":"c"}"#)
                #expect(ready.status == 200 && sent.status == 200, "\(ready.text) \(sent.text)")
            } catch {
                await deployment.shutdown()
                throw error
            }
            await deployment.shutdown()
        }
    }
}
