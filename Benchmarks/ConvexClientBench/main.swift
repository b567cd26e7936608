// Client latency benchmark: our ConvexClient against the official Python client (convex 0.8.1), both talking to the
// same embedded local deployment in the same run.
//
//   swift build -c release --scratch-path .build-release --product convex-client-bench
//   .build-release/release/convex-client-bench [rounds]      # needs .venv (scripts/prereqs.sh) or CONVEX_TEST_PYTHON
//
// Mutation round trip: sequential `conformance:increment` calls, each timed from the call until it returns (which,
// for both clients, is after the Transition that includes the commit).
// Subscription update: a subscriber of `bench:latest`; the benchmark commits `bench:stamp` in the deployment every
// 20 ms with the wall-clock time in microseconds, and the subscriber records (receipt time − stamp).
import Convex
import ConvexLocal
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
        String(format: "| %@ | %d | %.0f | %.0f | %.0f | %.0f |", name, samples.count, percentile(50), percentile(90),
               percentile(99), mean)
    }
}

let rounds = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 500
let python = ProcessInfo.processInfo.environment["CONVEX_TEST_PYTHON"] ?? ".venv/bin/python"
let scriptPath = "Benchmarks/client_bench.py"
guard FileManager.default.isExecutableFile(atPath: python) else {
    FileHandle.standardError.write(Data(
        "Python with the official client not found at \(python): run `bash -c '. scripts/prereqs.sh; ensure_python_venv'` or set CONVEX_TEST_PYTHON\n".utf8))
    exit(2)
}

let quiet: Logger = {
    var logger = Logger(label: "bench")
    logger.logLevel = .error
    return logger
}()
let functions = FunctionRegistry()
functions.mutation("bench:stamp", args: ["t": .float64]) { ctx, args in
    if let doc = ctx.query("stamps").first(), case .string(let id)? = doc["_id"] {
        try ctx.patch(id, ["t": args["t"] ?? 0.0])
    } else {
        _ = try ctx.insert("stamps", ["t": args["t"] ?? 0.0])
    }
    return .null
}
functions.query("bench:latest") { ctx, _ in
    ctx.query("stamps").first()?["t"] ?? 0.0
}
let deployment = try await LocalDeployment.start(port: 0, functions: functions, logger: quiet)
let url = deployment.url

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
    try await driver?.value
    guard let json = lines.last(where: { $0.hasPrefix("{") }),
          let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: [Double]],
          let samples = object["us"]
    else {
        throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "python \(mode) printed no results"])
    }
    return samples
}

/// Commits a stamp every 20 ms, `rounds` times.
@Sendable func stampLoop() async throws {
    for _ in 0..<rounds {
        _ = try deployment.mutation("bench:stamp", ["t": .float64(wallMicros())])
        try await Task.sleep(for: .milliseconds(20))
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
    var updates = client.subscribe(to: "bench:latest").makeAsyncIterator()
    _ = try await updates.next()
    let driver = Task { try await stampLoop() }
    var swiftUpdate: [Double] = []
    while swiftUpdate.count < rounds {
        guard case .float64(let stamp)? = try await updates.next() else { continue }
        swiftUpdate.append(wallMicros() - stamp)
    }
    try await driver.value
    let pythonUpdate = try await runPython("subscribe", whenReady: stampLoop)

    await client.close()
    await deployment.shutdown()
    return [swiftMutation, pythonMutation, swiftUpdate, pythonUpdate]
}

let samples = try await measure()
let (swiftMutation, pythonMutation, swiftUpdate, pythonUpdate) = (samples[0], samples[1], samples[2], samples[3])

var uts = utsname()
uname(&uts)
let machine = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
print("Client latency, \(rounds) rounds each, \(ProcessInfo.processInfo.activeProcessorCount) cores \(machine), microseconds")
print("")
print("| measurement | n | p50 | p90 | p99 | mean |")
print("| --- | --- | --- | --- | --- | --- |")
print(Stats(samples: swiftMutation).row("mutation round trip, Swift ConvexClient"))
print(Stats(samples: pythonMutation).row("mutation round trip, Python convex 0.8.1"))
print(Stats(samples: swiftUpdate).row("subscription update, Swift ConvexClient"))
print(Stats(samples: pythonUpdate).row("subscription update, Python convex 0.8.1"))
