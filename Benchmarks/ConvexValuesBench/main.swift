// Convex JSON → plain JSON throughput, against Foundation's JSONSerialization parse + re-serialize of the same bytes.
// Run: swift run -c release --scratch-path .build-release convex-values-bench
import ConvexValues
import Foundation
import TestSupport

/// A deterministic ~1 MiB Convex JSON document heavy in int64 and nested objects.
func makeDocument(targetBytes: Int) -> [UInt8] {
    var rng = SplitMix(seed: 42)
    var teams: [ConvexValue] = []
    var size = 0
    var i = 0
    while size < targetBytes {
        let history = (0..<12).map { _ in
            ConvexValue.int64(Int64.random(in: -1_000_000_000...1_000_000_000_000, using: &rng))
        }
        let team: ConvexValue = [
            "_id": .string("k57\(i)ab9xq2m8z7t4w3e1r0y6u5i4o3p2"),
            "_creationTime": .float64(1_732_000_000_000 + Double(i) * 17.25),
            "name": .string("Team \(i)"),
            "wins": .int64(Int64.random(in: 0...162, using: &rng)),
            "losses": .int64(Int64.random(in: 0...162, using: &rng)),
            "payroll": .int64(Int64.random(in: 1_000_000...400_000_000, using: &rng)),
            "stats": [
                "runs": .int64(Int64.random(in: 0...1000, using: &rng)),
                "hits": .int64(Int64.random(in: 0...2000, using: &rng)),
                "avg": .float64(Double(Int.random(in: 200...350, using: &rng)) / 1000),
                "era": .float64(Double(Int.random(in: 250...600, using: &rng)) / 100),
                "history": .array(history),
                "splits": [
                    "home": .int64(Int64.random(in: 0...81, using: &rng)),
                    "away": .int64(Int64.random(in: 0...81, using: &rng)),
                    "streak": ["kind": "W", "length": .int64(Int64.random(in: 0...12, using: &rng))],
                ],
            ],
            "active": .boolean(i % 3 != 0),
            "logo": .bytes(Data((0..<12).map { _ in UInt8.random(in: 0...255, using: &rng) })),
        ]
        size += team.convexJSON().count + 1
        teams.append(team)
        i += 1
    }
    return ConvexValue.object(["teams": .array(teams), "season": 2024]).convexJSON()
}

func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Runs `body` repeatedly for about `seconds` (after a warm-up) and returns MB/s over `bytes` per run, by wall-clock
/// time. The CPU-time rate is printed too: on a shared machine it shows the cost without time spent descheduled.
func measure(_ name: String, bytes: Int, seconds: Double = 3.0, _ body: () throws -> Int) rethrows -> Double {
    var sink = 0
    for _ in 0..<3 { sink &+= try body() }
    let clock = ContinuousClock()
    var runs = 0
    let start = clock.now
    let cpuStart = threadCPUSeconds()
    var elapsed = Duration.zero
    while elapsed < .milliseconds(Int(seconds * 1000)) {
        sink &+= try body()
        runs += 1
        elapsed = clock.now - start
    }
    let cpu = threadCPUSeconds() - cpuStart
    let secs = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let mbps = Double(bytes) * Double(runs) / secs / 1_000_000
    let cpuMBps = Double(bytes) * Double(runs) / cpu / 1_000_000
    print(
        String(
            format: "%-46@ %8.1f MB/s wall %8.1f MB/s CPU %9.3f ms/run  (%d runs, checksum %d)",
            name as NSString, mbps, cpuMBps, secs / Double(runs) * 1000, runs, sink & 0xFFFF))
    return mbps
}

/// Diagnostic documents for profiling single token kinds (`--shape ints|keys|floats`); the default is the mixed one.
func makeShape(_ shape: String) -> [UInt8] {
    var rng = SplitMix(seed: 7)
    switch shape {
    case "ints":
        let arrays = (0..<5).map { _ in
            ConvexValue.array(
                (0..<7000).map { _ in .int64(Int64.random(in: -1_000_000_000...1_000_000_000_000, using: &rng)) })
        }
        return ConvexValue.object(
            Dictionary(uniqueKeysWithValues: arrays.enumerated().map { ("a\($0.offset)", $0.element) })
        ).convexJSON()
    case "keys":
        let objects = (0..<4000).map { i in
            ConvexValue.object(
                Dictionary(uniqueKeysWithValues: (0..<20).map { ("field\($0)_\(i % 7)", ConvexValue.null) }))
        }
        return ConvexValue.object(["o": .array(objects)]).convexJSON()
    default:
        let floats = (0..<8000).map { _ in ConvexValue.float64(Double(Int.random(in: 0...1_000_000, using: &rng)) / 100)
        }
        return ConvexValue.object(["f": .array(floats), "g": .array(floats), "h": .array(floats), "i": .array(floats)])
            .convexJSON()
    }
}

let shapeIndex = CommandLine.arguments.firstIndex(of: "--shape")
let doc = shapeIndex.map { makeShape(CommandLine.arguments[$0 + 1]) } ?? makeDocument(targetBytes: 1 << 20)
let data = Data(doc)
let plainOnce = try ConvexJSONTranscoder.render(doc, mode: .plain)
let treeOnce = try ConvexValue(convexJSON: doc).json(mode: .plain)
precondition(treeOnce == plainOnce, "transcoder and value writer disagree")

let cpu =
    (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
    .split(separator: "\n").first { $0.hasPrefix("model name") }?
    .split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
print("machine: \(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores")
print("document: \(doc.count) bytes of Convex JSON (\(plainOnce.count) bytes as plain JSON)")

let ours = try measure("ConvexJSONTranscoder.render(.plain)", bytes: doc.count) {
    try ConvexJSONTranscoder.render(doc, mode: .plain).count
}
if CommandLine.arguments.contains("--transcoder-only") { exit(0) }
if CommandLine.arguments.contains("--parser-only") {
    _ = try measure("ConvexValue(convexJSON:)", bytes: doc.count) { try ConvexValue(convexJSON: doc).nestingDepth }
    exit(0)
}
let foundation = try measure("JSONSerialization parse + serialize", bytes: doc.count) {
    let object = try JSONSerialization.jsonObject(with: data)
    return try JSONSerialization.data(withJSONObject: object).count
}
_ = try measure("ConvexJSONTranscoder.render(.clean)", bytes: doc.count) {
    try ConvexJSONTranscoder.render(doc, mode: .clean).count
}
_ = try measure("ConvexJSONTranscoder.render(.encoded)", bytes: doc.count) {
    try ConvexJSONTranscoder.render(doc, mode: .encoded).count
}
_ = try measure("ConvexValue(convexJSON:) + json(mode: .plain)", bytes: doc.count) {
    try ConvexValue(convexJSON: doc).json(mode: .plain).count
}
_ = try measure("  of which ConvexValue(convexJSON:)", bytes: doc.count) {
    try ConvexValue(convexJSON: doc).nestingDepth
}
let tree = try ConvexValue(convexJSON: doc)
_ = measure("  of which json(mode: .plain)", bytes: doc.count) {
    tree.json(mode: .plain).count
}
let parsed = try JSONSerialization.jsonObject(with: data)
_ = try measure("  JSONSerialization.jsonObject only", bytes: doc.count, seconds: 1) {
    (try JSONSerialization.jsonObject(with: data) as? [String: Any])?.count ?? 0
}
_ = try measure("  JSONSerialization.data only", bytes: doc.count, seconds: 1) {
    try JSONSerialization.data(withJSONObject: parsed).count
}
print(String(format: "plain transcoder vs Foundation: %.1fx", ours / foundation))
