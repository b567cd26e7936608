import Foundation
import OffThePool
import TestSupport
import Testing

/// Three `convex-gateway` replicas behind HAProxy, started by `scripts/replicas` exactly as a user starts them (so the
/// balancer runs `deploy/haproxy.cfg`, the configuration docs/replicas.md shows), with the executables the tests were
/// built with. Their deployment is the embedded one of a gateway process of its own, reached through an
/// ``UpstreamLink`` the test can cut (`--convex-url`). The script starts a replica again when it exits, as a process
/// manager would; the test signals replicas through the pids the script keeps in its state directory.
final class ReplicaSet: Sendable {
    let balancerPort: Int
    let stateDirectory: URL
    /// The port of the link between the replicas and the deployment.
    let linkPort: Int

    private init(balancerPort: Int, stateDirectory: URL, linkPort: Int) {
        self.balancerPort = balancerPort
        self.stateDirectory = stateDirectory
        self.linkPort = linkPort
    }

    static func run<T: Sendable>(_ body: (ReplicaSet) async throws -> T) async throws -> T {
        try await TestGateway.run(.process) { deploymentHost in
            let deployment = try #require(
                BrowserCallTests.deploymentPort(inLog: deploymentHost.log), "no convex.url in the log")
            return try await UpstreamLink.run(upstream: deployment) { link in
                try await run(linkPort: link, body)
            }
        }
    }

    private static func run<T: Sendable>(linkPort: Int, _ body: (ReplicaSet) async throws -> T) async throws -> T {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("replicas-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: state) }
        let binaries = URL(fileURLWithPath: try GatewayProcess.binaryPath()).deletingLastPathComponent().path
        // The balancer's port and the three after it, below the ephemeral range that outgoing connections use.
        let port = try portBelowTheEphemeralRange() / 4 * 4
        var environment = GatewayProcess.inheritedEnvironment
        environment["REPLICAS_BIN_DIR"] = binaries
        let log = state.appendingPathComponent("script.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let script = try ChildProcess(
            "/bin/bash",
            arguments: [
                "scripts/replicas", "--port", "\(port)", "--state-dir", state.path,
                "--convex-url", "http://127.0.0.1:\(linkPort)", "--",
                // Short heartbeats: a stream whose replica is gone is noticed by the balancer within them.
                "--heartbeat-seconds", "2", "--threads", "2",
            ]
        ) { options in
            options.directory = GatewayProcess.packageRoot
            options.environment = environment
            options.standardError = try FileHandle(forWritingTo: log)
            options.standardOutput = try FileHandle(forWritingTo: log)
        }
        let set = ReplicaSet(balancerPort: port, stateDirectory: state, linkPort: linkPort)
        let ready = await eventually(timeout: .seconds(90)) {
            FileManager.default.fileExists(atPath: state.appendingPathComponent("ready").path) || !script.isRunning
        }
        guard ready, script.isRunning else {
            await script.stop(grace: .seconds(20))
            throw TestFailure("scripts/replicas did not get ready; its output:\n\(set.file("script.log"))")
        }
        do {
            let result = try await body(set)
            #expect(script.isRunning, "scripts/replicas ended during the test:\n\(set.file("script.log"))")
            await script.stop(grace: .seconds(20))
            return result
        } catch {
            await script.stop(grace: .seconds(20))
            // What the replicas and the balancer logged, so that a failure shows whether one of them crashed or cut
            // a connection.
            let logs = ["replica-1.log", "replica-2.log", "replica-3.log", "haproxy.log", "script.log"].map {
                "--- \($0) (last 3,000 characters):\n\(set.file($0).suffix(3000))"
            }
            throw TestFailure("\(error)\n" + logs.joined(separator: "\n"))
        }
    }

    /// Cuts every connection between the replicas and the deployment (they connect again by themselves).
    func cutUpstream() async throws -> Int {
        let port = linkPort
        return try await blocking { try UpstreamLink.cut(port: port) }
    }

    /// The text of a file in the state directory ("" when it is not there).
    func file(_ name: String) -> String {
        (try? String(contentsOf: stateDirectory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    /// The pid of replica `k` (1...3) as the script last started it.
    func pid(ofReplica k: Int) -> Int32? {
        Int32(file("replica-\(k).pid").trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// How often HAProxy has logged replica `k` going down and coming back up (`Server gateways/replicaK is DOWN`).
    func balancerTransitions(ofReplica k: Int) -> (down: Int, up: Int) {
        let lines = file("haproxy.log").split(separator: "\n")
        return (
            lines.filter { $0.contains("gateways/replica\(k) is DOWN") }.count,
            lines.filter { $0.contains("gateways/replica\(k) is UP") }.count
        )
    }

    /// Sends `signal` to replica `k` and waits until the script has started it again (a new pid answering) and, as a
    /// rolling restart must before it stops the next one, until the balancer has it back in rotation.
    func signal(_ signal: Int32, replica k: Int) async throws {
        let old = try #require(pid(ofReplica: k), "no pid for replica \(k)")
        let before = balancerTransitions(ofReplica: k)
        kill(old, signal)
        let restarted = await eventually(timeout: .seconds(60)) {
            guard let new = self.pid(ofReplica: k), new != old else { return false }
            let port = self.balancerPort + k
            return (try? await blocking { try RawConnection.get("/readyz", port: port) })?.status == 200
        }
        #expect(
            restarted,
            "replica \(k) did not come back after signal \(signal):\n\(file("replica-\(k).log").suffix(4000))")
        // Every time HAProxy took it out since the signal (a graceful stop always: its drain outlasts a health check;
        // a kill only if a check came before the restart), it must have put it back (two good checks, deploy/haproxy.cfg).
        let back = await eventually(timeout: .seconds(60)) {
            let now = self.balancerTransitions(ofReplica: k)
            return now.up - before.up >= now.down - before.down
        }
        #expect(back, "the balancer did not put replica \(k) back:\n\(file("haproxy.log").suffix(4000))")
    }
}
