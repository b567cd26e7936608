import Foundation
import OffThePool
import Synchronization
import TestSupport
import Testing

/// What the chaos loop did to the replica set.
enum Disruption: String, Sendable {
    case sigterm = "SIGTERM"
    case sigkill = "SIGKILL"
    case upstreamCut = "upstream cut"
}

/// Each disruption and when it came, in wall-clock time (`Date`, which a page's `Date.now()` compares with), so that
/// an error is told apart by what came before it and each client's time to its next event can be measured.
final class ChaosLog: Sendable {
    private let entries = Mutex<[(Disruption, Date)]>([])

    func record(_ disruption: Disruption) {
        // Real time: what is measured is how long real clients take to hear again after it.
        entries.withLock { $0.append((disruption, Date())) }
    }
    var all: [(disruption: Disruption, at: Date)] { entries.withLock { $0.map { ($0.0, $0.1) } } }
    /// The latest disruption, or "none".
    var last: String { entries.withLock { $0.last?.0.rawValue ?? "none" } }

    /// For each disruption of `kind` (every kind when nil), the milliseconds from it to the first of `arrivals` after
    /// it; disruptions with no arrival after them are left out.
    func delays(to arrivals: [Date], of kind: Disruption? = nil) -> [Int] {
        let sorted = arrivals.sorted()
        return all.filter { kind == nil || $0.disruption == kind }.compactMap { entry in
            sorted.first { $0 > entry.at }.map { Int($0.timeIntervalSince(entry.at) * 1000) }
        }
    }

    /// "p50 … p99 … ms (n)" for each kind of disruption, of the delays to `arrivals`.
    func summary(of arrivals: [Date]) -> String {
        [Disruption.sigterm, .sigkill, .upstreamCut].map { kind in
            let delays = delays(to: arrivals, of: kind).sorted()
            guard !delays.isEmpty else { return "\(kind.rawValue): none" }
            let p50 = delays[(delays.count - 1) / 2]
            let p99 = delays[min(delays.count - 1, Int((Double(delays.count) * 0.99).rounded(.up)) - 1)]
            return "\(kind.rawValue) p50 \(p50) ms, p99 \(p99) ms of \(delays)"
        }.joined(separator: "; ")
    }
}

/// Mutations one after another, each outcome recorded: acknowledged (the count it made), or lost with its replica.
final class BusyWriter: Sendable {
    let port: Int
    let name: String
    let chaos: ChaosLog
    private struct State {
        var acknowledged: [Int] = []
        /// Answers that say the outcome is unknown (502 or 504 `OutcomeUnknown`), with the disruption before them.
        var unknown: [String] = []
        /// Any other answer: each is a failure of the replica set.
        var failed: [String] = []
        var stopped = false
    }
    private let state = Mutex(State())

    init(port: Int, name: String, chaos: ChaosLog) {
        self.port = port
        self.name = name
        self.chaos = chaos
    }

    func stop() { state.withLock { $0.stopped = true } }

    func run() async {
        let port = port
        let body = Array(#"{"name":"\#(name)"}"#.utf8)
        while !state.withLock({ $0.stopped }) {
            let answer = try? await blocking {
                try RawConnection.request(
                    "POST", "/mutation/conformance:increment", port: port,
                    headers: ["Content-Type": "application/json"], body: body)
            }
            let last = chaos.last
            state.withLock { state in
                guard let answer else { return state.failed.append("no answer (the connection failed) after \(last)") }
                if answer.status == 200, let count = Int(answer.text) {
                    state.acknowledged.append(count)
                } else if [502, 504].contains(answer.status) && answer.errorCode == "OutcomeUnknown" {
                    let message = answer.text.contains("gateway stopped") ? " (the gateway's)" : " (the balancer's)"
                    state.unknown.append("\(answer.status)\(message) after \(last)")
                } else {
                    state.failed.append("\(answer.status) \(answer.text) after \(last)")
                }
            }
        }
    }

    /// Every acknowledged mutation ran once (their counts rise one by one, apart from unknown outcomes that ran), and
    /// the deployment's count is the acknowledged ones plus some of the unknown ones. Returns the count.
    func check() async throws -> Int {
        let (acknowledged, unknown, failed) = state.withLock { ($0.acknowledged, $0.unknown, $0.failed) }
        let port = port
        let name = name
        let final = try await blocking {
            try RawConnection.request("GET", "/query/conformance:counter?name=\(name)", port: port)
        }
        let count = Int(final.text) ?? -1
        print(
            "replicas: the busy writer's mutations: \(acknowledged.count) acknowledged, \(unknown.count) of unknown outcome (\(unknown)), \(failed.count) failed; the count is \(count)"
        )
        #expect(failed.isEmpty, "mutations that failed: \(failed)")
        // A replica that drains finishes what it was doing, and a mutation whose deployment connection broke is sent
        // again in the same session: only a killed replica leaves an outcome unknown.
        #expect(
            unknown.allSatisfy { $0.hasSuffix(Disruption.sigkill.rawValue) },
            "outcomes left unknown by a graceful stop or a cut upstream: \(unknown)")
        #expect(
            acknowledged == acknowledged.sorted() && Set(acknowledged).count == acknowledged.count,
            "an acknowledged count repeated or went back: \(acknowledged)")
        #expect(
            count >= acknowledged.count && count <= acknowledged.count + unknown.count,
            "the count \(count) is not the \(acknowledged.count) acknowledged plus some of the \(unknown.count) unknown"
        )
        #expect(acknowledged.last.map { $0 <= count } ?? true)
        return count
    }
}

/// A long-poll client (docs/caching-and-consistency.md): `GET` with the last `ETag` in `If-None-Match` and
/// `Prefer: wait=5`, again and again, recording every value it is given and every answer that is neither a value nor
/// a 304. As docs/replicas.md tells clients behind a balancer, it sends the highest `Convex-Timestamp` it was given
/// as `Convex-Min-Timestamp`, so that a replica whose view is behind another's never answers with an older value.
final class LongPoller: Sendable {
    let port: Int
    let target: String
    let chaos: ChaosLog
    private struct State {
        var values: [String] = []
        var arrivals: [Date] = []
        /// Answers other than 200 and 304, with the disruption before them, and when each came.
        var errors: [(text: String, at: Date)] = []
        var stopped = false
    }
    private let state = Mutex(State())

    init(port: Int, target: String, chaos: ChaosLog) {
        self.port = port
        self.target = target
        self.chaos = chaos
    }

    var values: [String] { state.withLock { $0.values } }
    var arrivals: [Date] { state.withLock { $0.arrivals } }
    var errors: [(text: String, at: Date)] { state.withLock { $0.errors } }
    func stop() { state.withLock { $0.stopped = true } }

    func run() async {
        await blocking { self.pollUntilStopped() }
    }

    @available(*, noasync)
    private func pollUntilStopped() {
        var etag: String?
        var timestamp: UInt64?
        while !state.withLock({ $0.stopped }) {
            var headers = ["Prefer": "wait=5"]
            if let etag { headers["If-None-Match"] = etag }
            if let timestamp { headers["Convex-Min-Timestamp"] = String(timestamp) }
            let answer: TestResponse
            do {
                answer = try RawConnection.request("GET", target, port: port, headers: headers)
            } catch {
                // Real time: when the error came, to tell which disruption it followed.
                state.withLock { $0.errors.append(("no answer (\(error)) after \(chaos.last)", Date())) }
                usleep(50_000)
                continue
            }
            if let seen = answer.header("Convex-Timestamp").flatMap(UInt64.init) {
                timestamp = max(timestamp ?? 0, seen)
            }
            switch answer.status {
            case 200:
                etag = answer.header("ETag")
                state.withLock {
                    $0.values.append(answer.text)
                    // Real time: when the value came, for the time from a disruption to it.
                    $0.arrivals.append(Date())
                }
            case 304:
                continue
            default:
                // Real time: when the error came, to tell which disruption it followed.
                state.withLock { $0.errors.append(("\(answer.status) \(answer.text) after \(chaos.last)", Date())) }
                usleep(50_000)
            }
        }
    }
}

/// A Server-Sent Events reader that opens its stream again (with `Last-Event-ID`) whenever it ends, as EventSource
/// does, recording every value and how long each reconnection took.
final class ReconnectingReader: Sendable {
    let port: Int
    let target: String
    private struct State {
        var values: [String] = []
        var arrivals: [Date] = []
        var failures: [String] = []
        var reconnectMilliseconds: [Int] = []
        /// When each stream ended (the server or the network ended it).
        var ends: [Date] = []
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
    /// When each value came.
    var arrivals: [Date] { state.withLock { $0.arrivals } }
    var failures: [String] { state.withLock { $0.failures } }
    var reconnectMilliseconds: [Int] { state.withLock { $0.reconnectMilliseconds } }
    var ends: [Date] { state.withLock { $0.ends } }

    /// Stops reading: the stream being read is interrupted (its reader, blocked in a read, closes it).
    func stop() {
        let stream = state.withLock { state in
            state.stopped = true
            return state.stream
        }
        stream?.interrupt()
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
            // A stop that came before the stream was stored did not interrupt it: it stops here.
            guard
                !state.withLock({ state in
                    state.stream = stream
                    return state.stopped
                })
            else {
                stream.close()
                break
            }
            do {
                while let event = try stream.nextEvent() {
                    if let id = event.id { lastEventID = id }
                    if event.event == "failure" || event.event == "fatal" {
                        state.withLock { $0.failures.append("\(event.event ?? ""): \(event.data)") }
                    } else {
                        state.withLock {
                            $0.values.append(event.data)
                            // Real time: when the value came, for the time from a disruption to it.
                            $0.arrivals.append(Date())
                        }
                    }
                }
            } catch {}
            stream.close()
            // Real time: the moment the stream was lost, for the time until it is back.
            if endedAt == nil { endedAt = ContinuousClock.now }
            let stopped = state.withLock { state in
                // Real time: when the stream ended, to tell which disruption ended it.
                if !state.stopped { state.ends.append(Date()) }
                return state.stopped
            }
            if stopped { break }
            usleep(50_000)
        }
    }
}
