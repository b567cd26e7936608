import Convex
import Foundation
import OffThePool
import Synchronization
import TestSupport
import Testing

/// Replicas as users run them: three gateways behind HAProxy (``ReplicaSet``, `scripts/replicas`), replicas stopped
/// with SIGTERM and killed with SIGKILL while a reader follows a live count through the balancer and a writer
/// changes it. Run by scripts/test after the parallel suites (`CONVEX_TEST_REPLICAS=1`), where HAProxy is installed.
@Suite(
    .serialized, .enabled(if: ProcessInfo.processInfo.environment["CONVEX_TEST_REPLICAS"] == "1"),
    .timeLimit(.minutes(10)))
struct ReplicasBehindBalancerTests {
    /// Ten graceful restarts and ten kills.
    static let rounds = 20

    /// A token the local deployment accepts (it checks no signature without an auth config): expires in 2100.
    static func unsignedToken(subject: String) -> String {
        Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "."
            + Base64URL.encode(Array(#"{"sub":"\#(subject)","exp":4102444800}"#.utf8)) + ".sig"
    }

    @Test("through HAProxy, replicas restarted and killed lose no write, run none twice, and readers never go back")
    func restartsAndKillsThroughTheBalancer() async throws {
        try await ReplicaSet.run { set in
            let port = set.balancerPort
            let name = "replicas-\(UUID().uuidString.prefix(8))"
            let reader = ReconnectingReader(port: port, target: "/subscribe/conformance:counter?name=\(name)")
            let reading = Task { await reader.run() }
            defer {
                reader.stop()
                reading.cancel()
            }
            #expect(await eventually(timeout: .seconds(30)) { reader.numbers.contains(0) }, "the reader's first value")
            // A signed-in page's stream, by a ticket minted through the balancer: it must stay signed in whichever
            // replica it reconnects to (they share the ticket key), never silently anonymous.
            let token = Self.unsignedToken(subject: "replica-user")
            let minted = try await blocking {
                try RawConnection.request(
                    "POST", "/stream-tickets", port: port, headers: ["Authorization": "Bearer \(token)"], body: [])
            }
            let ticket = try #require(minted.json?["ticket"].flatMap { if case .string(let t) = $0 { t } else { nil } })
            let signedIn = ReconnectingReader(port: port, target: "/subscribe/conformance:whoami?ticket=\(ticket)")
            let signedInReading = Task { await signedIn.run() }
            defer {
                signedIn.stop()
                signedInReading.cancel()
            }
            #expect(await eventually(timeout: .seconds(30)) { !signedIn.values.isEmpty }, "the signed-in stream")
            // Beside the rounds, a writer that never pauses: some of its mutations are in flight when a replica goes.
            let writer = BusyWriter(port: port, name: name + "-busy")
            let writing = Task { await writer.run() }
            defer { writer.stop() }
            for round in 1...Self.rounds {
                // A write through whichever replica the balancer picks: applied exactly once (the count is the round).
                let answer = try await blocking {
                    try RawConnection.request(
                        "POST", "/mutation/conformance:increment", port: port,
                        headers: ["Content-Type": "application/json"], body: Array(#"{"name":"\#(name)"}"#.utf8))
                }
                #expect(answer.status == 200, "round \(round): the mutation failed: \(answer.text)")
                #expect(answer.text == "\(round)", "round \(round): the count after the mutation")
                // A read after the write sees it, through whichever replica answers.
                let timestamp = answer.header("Convex-Timestamp") ?? ""
                #expect(!timestamp.isEmpty, "round \(round): no Convex-Timestamp")
                let read = try await blocking {
                    try RawConnection.request(
                        "GET", "/query/conformance:counter?name=\(name)", port: port,
                        headers: ["Convex-Min-Timestamp": timestamp])
                }
                #expect(read.status == 200 && read.text == "\(round)", "round \(round): read after write: \(read.text)")
                // The reader gets there, whatever happened to its replica.
                let seen = await eventually(timeout: .seconds(30)) { reader.numbers.last == round }
                #expect(seen, "round \(round): the reader's values \(reader.numbers)")
                // Then a replica goes: gracefully on odd rounds, killed on even ones.
                let graceful = round % 2 == 1
                let replica = round % 3 + 1
                // Before a graceful stop, an action that outlasts the drain delay, sent to that replica itself: it
                // must be answered, not cut off.
                let replicaPort = port + replica
                let slow: Task<TestResponse, any Error>? =
                    graceful
                    ? Task {
                        try await blocking {
                            try RawConnection.request(
                                "POST", "/action/conformance:sleep", port: replicaPort,
                                headers: ["Content-Type": "application/json"], body: Array(#"{"ms":3000}"#.utf8))
                        }
                    } : nil
                writer.replicaGoes(gracefully: graceful)
                try await set.signal(graceful ? SIGTERM : SIGKILL, replica: replica)
                if let slow {
                    let answer = try await slow.value
                    #expect(answer.status == 200, "round \(round): the action running at SIGTERM: \(answer.text)")
                }
            }
            writer.stop()
            await writing.value
            try await writer.check()
            let values = reader.numbers
            #expect(values.count == reader.values.count, "a value that is not a count: \(reader.values)")
            #expect(values == values.sorted(), "a value went back in time: \(values)")
            #expect(Set(values).isSuperset(of: [Self.rounds]), "the last write reached the reader: \(values)")
            #expect(reader.failures.isEmpty, "the reader got errors: \(reader.failures)")
            #expect(
                signedIn.values.allSatisfy { $0.contains("replica-user") },
                "the signed-in stream showed another identity: \(signedIn.values)")
            #expect(signedIn.failures.isEmpty, "the signed-in stream got errors: \(signedIn.failures)")
            #expect(!signedIn.reconnectMilliseconds.isEmpty, "the signed-in stream never had to move")
            let gaps = reader.reconnectMilliseconds.sorted()
            print("replicas: the reader reconnected \(gaps.count) times; time to its next stream, ms: \(gaps)")
        }
    }
}

/// Mutations one after another, each outcome recorded: acknowledged (the count it made), or lost with its replica.
final class BusyWriter: Sendable {
    let port: Int
    let name: String
    private struct State {
        var acknowledged: [Int] = []
        /// Answers that say the outcome is unknown (502 or 504 `OutcomeUnknown`), with how the replica last went.
        var unknown: [String] = []
        var lastGoneGracefully = true
        /// Any other answer: each is a failure of the replica set.
        var failed: [String] = []
        var stopped = false
    }
    private let state = Mutex(State())

    init(port: Int, name: String) {
        self.port = port
        self.name = name
    }

    func stop() { state.withLock { $0.stopped = true } }

    /// A replica is about to be stopped (SIGTERM) or killed (SIGKILL).
    func replicaGoes(gracefully: Bool) { state.withLock { $0.lastGoneGracefully = gracefully } }

    func run() async {
        let port = port
        let body = Array(#"{"name":"\#(name)"}"#.utf8)
        while !state.withLock({ $0.stopped }) {
            let answer = try? await blocking {
                try RawConnection.request(
                    "POST", "/mutation/conformance:increment", port: port,
                    headers: ["Content-Type": "application/json"], body: body)
            }
            state.withLock { state in
                guard let answer else { return state.failed.append("no answer (the connection failed)") }
                if answer.status == 200, let count = Int(answer.text) {
                    state.acknowledged.append(count)
                } else if [502, 504].contains(answer.status) && answer.errorCode == "OutcomeUnknown" {
                    let message = answer.text.contains("gateway stopped") ? " (the gateway's)" : " (the balancer's)"
                    state.unknown.append(
                        "\(answer.status)\(message) after \(state.lastGoneGracefully ? "SIGTERM" : "SIGKILL")")
                } else {
                    state.failed.append("\(answer.status) \(answer.text)")
                }
            }
        }
    }

    /// Every acknowledged mutation ran once (their counts rise one by one, apart from unknown outcomes that ran), and
    /// the deployment's count is the acknowledged ones plus some of the unknown ones.
    func check() async throws {
        let (acknowledged, unknown, failed) = state.withLock { ($0.acknowledged, $0.unknown, $0.failed) }
        let port = port
        let name = name
        let final = try await blocking {
            try RawConnection.request("GET", "/query/conformance:counter?name=\(name)", port: port)
        }
        let count = Int(final.text) ?? -1
        print(
            "replicas: the busy writer's mutations: \(acknowledged.count) acknowledged, \(unknown.count) of unknown outcome, \(failed.count) failed; the count is \(count)"
        )
        #expect(failed.isEmpty, "mutations that failed: \(failed)")
        // A replica that drains finishes what it was doing: only a killed one leaves an outcome unknown.
        #expect(!unknown.contains { $0.hasSuffix("SIGTERM") }, "a graceful stop left outcomes unknown: \(unknown)")
        #expect(
            acknowledged == acknowledged.sorted() && Set(acknowledged).count == acknowledged.count,
            "an acknowledged count repeated or went back: \(acknowledged)")
        #expect(
            count >= acknowledged.count && count <= acknowledged.count + unknown.count,
            "the count \(count) is not the \(acknowledged.count) acknowledged plus some of the \(unknown.count) unknown"
        )
        #expect(acknowledged.last.map { $0 <= count } ?? true)
    }
}

/// A Server-Sent Events reader that opens its stream again (with `Last-Event-ID`) whenever it ends, as EventSource
/// does, recording every value and how long each reconnection took.
final class ReconnectingReader: Sendable {
    let port: Int
    let target: String
    private struct State {
        var values: [String] = []
        var failures: [String] = []
        var reconnectMilliseconds: [Int] = []
        var stopped = false
        var stream: EventStreamReader?
    }
    private let state = Mutex(State())

    init(port: Int, target: String) {
        self.port = port
        self.target = target
    }

    /// The `data` of every value event, in order.
    var values: [String] { state.withLock { $0.values } }
    /// The values that are numbers.
    var numbers: [Int] { values.compactMap { Int($0) } }
    var failures: [String] { state.withLock { $0.failures } }
    var reconnectMilliseconds: [Int] { state.withLock { $0.reconnectMilliseconds } }

    func stop() {
        let stream = state.withLock { state in
            state.stopped = true
            return state.stream
        }
        stream?.close()
    }

    func run() async {
        await blocking { self.readUntilStopped() }
    }

    @available(*, noasync)
    private func readUntilStopped() {
        var lastEventID: String?
        // Real time: how long a reader is without its stream after a replica goes is what the test reports.
        var endedAt: ContinuousClock.Instant?
        while !state.withLock({ $0.stopped }) {
            let headers = lastEventID.map { ["Last-Event-ID": $0] } ?? [:]
            guard let stream = try? EventStreamReader(port: port, target: target, headers: headers) else {
                usleep(50_000)
                continue
            }
            guard stream.head.status == 200 else {
                state.withLock { $0.failures.append("a reconnection got \(stream.head.status)") }
                stream.close()
                usleep(50_000)
                continue
            }
            if let endedAt {
                // Back: the stream is open again (a resumed stream whose values did not change sends none at once).
                let gap = ContinuousClock.now - endedAt
                state.withLock { $0.reconnectMilliseconds.append(Int(gap / .milliseconds(1))) }
            }
            endedAt = nil
            state.withLock { $0.stream = stream }
            do {
                while let event = try stream.nextEvent() {
                    if let id = event.id { lastEventID = id }
                    if event.event == "failure" || event.event == "fatal" {
                        state.withLock { $0.failures.append("\(event.event ?? ""): \(event.data)") }
                    } else {
                        state.withLock { $0.values.append(event.data) }
                    }
                }
            } catch {}
            stream.close()
            // Real time: the moment the stream was lost, for the time until it is back.
            if endedAt == nil { endedAt = ContinuousClock.now }
            usleep(50_000)
        }
    }
}
