import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization

/// Mutation → subscriber update latency of the local deployment: N WebSocket subscribers watch
/// `conformance:counter {name: "bench"}`; each round runs `conformance:increment` and measures, for every
/// subscriber, the time from the mutation's start to the Transition carrying the new value.
///
/// Usage: local-deployment-bench [subscribers...] (default 1 100 1000), env ROUNDS (default 50).
@main
struct LocalDeploymentBenchmark {
    static func main() async throws {
        let counts = CommandLine.arguments.dropFirst().compactMap { Int($0) }
        let rounds = ProcessInfo.processInfo.environment["ROUNDS"].flatMap(Int.init) ?? 50
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        print("| Subscribers | Rounds | Updates measured | p50 | p99 | max |")
        print("| --- | --- | --- | --- | --- | --- |")
        for n in counts.isEmpty ? [1, 100, 1000] : counts {
            try await run(subscribers: n, rounds: rounds, logger: logger)
        }
    }

    final class Receipts: Sendable {
        let state = Mutex<[Int64: [ContinuousClock.Instant]]>([:])
        func record(_ value: Int64) {
            let now = ContinuousClock.now
            state.withLock { $0[value, default: []].append(now) }
        }
        func count(_ value: Int64) -> Int { state.withLock { $0[value]?.count ?? 0 } }
        func times(_ value: Int64) -> [ContinuousClock.Instant] { state.withLock { $0[value] ?? [] } }
    }

    static func run(subscribers n: Int, rounds: Int, logger: Logger) async throws {
        let deployment = try await LocalDeployment.start(port: 0, logger: logger)
        let receipts = Receipts()
        let name: ConvexValue = .string("bench")
        let url = "ws://127.0.0.1:\(deployment.port)/api/sync"
        let tasks = (0..<n).map { _ in
            Task {
                try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 24), logger: logger)
                { inbound, outbound, _ in
                    try await outbound.write(
                        .text(
                            ClientMessage.connect(
                                .init(
                                    sessionId: UUID().uuidString, connectionCount: 0, lastCloseReason: "InitialConnect",
                                    clientTs: 0)
                            ).jsonText))
                    try await outbound.write(
                        .text(
                            ClientMessage.modifyQuerySet(
                                .init(
                                    baseVersion: 0, newVersion: 1,
                                    modifications: [
                                        .add(.init(queryId: 0, udfPath: "conformance:counter", args: ["name": name]))
                                    ])
                            ).jsonText))
                    for try await message in inbound.messages(maxSize: 1 << 24) {
                        guard case .text(let text) = message, case .transition(let t) = try ServerMessage(json: text)
                        else { continue }
                        for case .queryUpdated(_, .int64(let v), _, _) in t.modifications { receipts.record(v) }
                    }
                }
            }
        }
        // Everyone has the initial value 0.
        try await waitFor(seconds: 120) { receipts.count(0) >= n }
        var latencies: [Duration] = []
        latencies.reserveCapacity(n * rounds)
        for round in 1...rounds {
            let start = ContinuousClock.now
            _ = try deployment.mutation("conformance:increment", ["name": name])
            try await waitFor(seconds: 60) { receipts.count(Int64(round)) >= n }
            latencies += receipts.times(Int64(round)).map { $0 - start }
        }
        latencies.sort()
        func pct(_ p: Double) -> String {
            format(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))])
        }
        print(
            "| \(n) | \(rounds) | \(latencies.count) | \(pct(0.50)) | \(pct(0.99)) | \(format(latencies.last ?? .zero)) |"
        )
        await deployment.shutdown()
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
    }

    static func waitFor(seconds: Int, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            if ContinuousClock.now > deadline { throw BenchmarkTimeout() }
            try await Task.sleep(for: .microseconds(200))
        }
    }

    static func format(_ d: Duration) -> String {
        let ms = Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
        return String(format: "%.2f ms", ms)
    }

    struct BenchmarkTimeout: Error {}
}
