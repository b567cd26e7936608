// Client latency benchmark: our ConvexClient against the official Python client (convex 0.8.1), both talking to the
// same local deployment (a `convex-local` process) in the same run.
//
//   swift build -c release --scratch-path .build-release --product convex-local
//   swift build -c release --scratch-path .build-release --product convex-client-bench
//   .build-release/release/convex-client-bench [rounds]      # needs .venv (scripts/prereqs.sh) or CONVEX_TEST_PYTHON
//
// Mutation round trip: sequential `conformance:increment` calls, each timed from the call until it returns (which,
// for both clients, is after the Transition that includes the commit).
// Subscription update: a subscriber of `conformance:counter`; a driver client (ours, in this process) increments the
// counter every 20 ms and notes the wall-clock time just before each call; the subscriber notes when each value
// arrives. Latency = arrival − send time of that value (mutation transit + commit + Transition to the subscriber).
import Convex
import ConvexValues
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

func wallMicros() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) * 1_000_000 + Double(ts.tv_nsec / 1000)
}

struct Stats {
    let samples: [Double]  // microseconds

    func percentile(_ p: Double) -> Double {
        let sorted = samples.sorted()
        let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[index]
    }

    var mean: Double { samples.reduce(0, +) / Double(samples.count) }

    func row(_ name: String) -> String {
        String(
            format: "| %@ | %d | %.0f | %.0f | %.0f | %.0f |", name, samples.count, percentile(50), percentile(90),
            percentile(99), mean)
    }
}

let rounds = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 500
let python = ProcessInfo.processInfo.environment["CONVEX_TEST_PYTHON"] ?? ".venv/bin/python"
let scriptPath = "Benchmarks/client_bench.py"
guard FileManager.default.isExecutableFile(atPath: python) else {
    FileHandle.standardError.write(
        Data(
            "Python with the official client not found at \(python): run `bash -c '. scripts/prereqs.sh; ensure_python_venv'` or set CONVEX_TEST_PYTHON\n"
                .utf8))
    exit(2)
}

let quiet: Logger = {
    var logger = Logger(label: "bench")
    logger.logLevel = .error
    return logger
}()

/// Starts `convex-local` on a free port and returns the process and its URL (read from its log line).
func startDeployment() throws -> (Process, String) {
    let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("convex-local").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["--port", "0", "--log-level", "notice"]
    let log = Pipe()
    process.standardError = log
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    var buffer = ""
    while true {
        let chunk = log.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        buffer += String(decoding: chunk, as: UTF8.self)
        if let range = buffer.range(of: #"url=http://[0-9.]+:[0-9]+"#, options: .regularExpression) {
            return (process, String(buffer[range].dropFirst(4)))
        }
    }
    throw NSError(
        domain: "bench", code: 3, userInfo: [NSLocalizedDescriptionKey: "convex-local did not start: \(buffer)"])
}

let (server, url) = try startDeployment()
let driverClient = try ConvexClient(deploymentUrl: url, logger: quiet)
/// Send time (wall clock, µs) of each counter value.
let sendTimes = SendTimes()

final class SendTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [String: Double] = [:]
    func record(_ counter: String, _ value: Int64, _ time: Double) {
        lock.withLock { times["\(counter)#\(value)"] = time }
    }
    func time(_ counter: String, _ value: Int64) -> Double? { lock.withLock { times["\(counter)#\(value)"] } }
}

/// Runs the Python side; `whenReady` runs once the script prints `ready`.
func runPython(_ mode: String, whenReady: (@Sendable () async throws -> Void)? = nil) async throws -> [Double] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [scriptPath, mode, url, String(rounds)]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    var lines: [String] = []
    var buffer = Data()
    let handle = output.fileHandleForReading
    var driver: Task<Void, any Error>?
    while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        buffer.append(chunk)
        while let newline = buffer.firstIndex(of: 0x0A) {
            let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
            buffer.removeSubrange(buffer.startIndex...newline)
            if line == "ready", let whenReady { driver = Task { try await whenReady() } }
            lines.append(line)
        }
    }
    process.waitUntilExit()
    driver?.cancel()
    try await driver?.value
    guard let json = lines.last(where: { $0.hasPrefix("{") }),
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
    else {
        throw NSError(
            domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "python \(mode) printed no results"])
    }
    if let samples = object["us"] as? [Double] { return samples }
    // Subscription: (value, arrival) pairs, matched with the driver's send times.
    let pairs = object["arrivals"] as? [[Double]] ?? []
    return pairs.compactMap { pair in sendTimes.time("py-sub", Int64(pair[0])).map { pair[1] - $0 } }
}

/// Increments `counter` every 20 ms until cancelled, noting each value's send time (a subscriber may skip a
/// superseded value, so the number of increments is not fixed).
@Sendable func incrementLoop(_ counter: String) async throws {
    var next =
        try await driverClient.query("conformance:counter", with: ["name": .string(counter)], yielding: Int64.self) + 1
    while !Task.isCancelled {
        sendTimes.record(counter, next, wallMicros())
        do {
            next =
                try await driverClient.mutation(
                    "conformance:increment", with: ["name": .string(counter)],
                    yielding: Int64.self) + 1
        } catch {
            if Task.isCancelled { return }  // stopped while an increment was in flight
            throw error
        }
        try? await Task.sleep(for: .milliseconds(20))
    }
}

/// Measures both clients; returns (Swift mutation, Python mutation, Swift update, Python update) samples.
func measure() async throws -> [[Double]] {
    let client = try ConvexClient(deploymentUrl: url, logger: quiet)

    // Mutation round trip.
    for _ in 0..<50 { try await client.mutation("conformance:increment", with: ["name": "swift-warm"]) }
    var swiftMutation: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<rounds {
        let elapsed = try await clock.measure {
            try await client.mutation("conformance:increment", with: ["name": "swift-rtt"])
        }
        swiftMutation.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
    }
    let pythonMutation = try await runPython("mutation")

    // Subscription update latency.
    var updates = client.subscribe(to: "conformance:counter", with: ["name": "swift-sub"]).makeAsyncIterator()
    _ = try await updates.next()
    let driver = Task { try await incrementLoop("swift-sub") }
    var swiftUpdate: [Double] = []
    while swiftUpdate.count < rounds {
        guard case .int64(let value)? = try await updates.next() else { continue }
        let arrival = wallMicros()
        if let sent = sendTimes.time("swift-sub", value) { swiftUpdate.append(arrival - sent) }
    }
    driver.cancel()
    try await driver.value
    let pythonUpdate = try await runPython("subscribe", whenReady: { try await incrementLoop("py-sub") })

    await client.close()
    await driverClient.close()
    server.terminate()
    server.waitUntilExit()
    return [swiftMutation, pythonMutation, swiftUpdate, pythonUpdate]
}

let samples: [[Double]]
do {
    samples = try await measure()
} catch {
    server.terminate()
    FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
    exit(1)
}
let (swiftMutation, pythonMutation, swiftUpdate, pythonUpdate) = (samples[0], samples[1], samples[2], samples[3])

var uts = utsname()
uname(&uts)
let machine = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
print(
    "Client latency, \(rounds) rounds each, \(ProcessInfo.processInfo.activeProcessorCount) cores \(machine), microseconds"
)
print("")
print("| measurement | n | p50 | p90 | p99 | mean |")
print("| --- | --- | --- | --- | --- | --- |")
print(Stats(samples: swiftMutation).row("mutation round trip, Swift ConvexClient"))
print(Stats(samples: pythonMutation).row("mutation round trip, Python convex 0.8.1"))
print(Stats(samples: swiftUpdate).row("subscription update, Swift ConvexClient"))
print(Stats(samples: pythonUpdate).row("subscription update, Python convex 0.8.1"))
