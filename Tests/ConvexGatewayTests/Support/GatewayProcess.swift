import Foundation
import TestSupport
import Testing

/// The real `convex-gateway` executable (built next to the test binary by `swift build --build-tests`) on the
/// embedded deployment (`TestGateway.run(.process)`), in its own process on 127.0.0.1 with a port it picks itself. Running it apart lets the
/// hostile-input tests count exactly its descriptors and memory (`/proc/<pid>/fd`, `VmRSS`) while other suites run,
/// and notice if it crashes.
final class GatewayProcess: GatewayUnderTest {
    let process: ChildProcess
    let port: Int
    let logPath: String
    var pid: Int32 { process.pid }

    init(process: ChildProcess, port: Int, logPath: String) {
        self.process = process
        self.port = port
        self.logPath = logPath
    }

    /// `CONVEX_GATEWAY_BINARY`, or `convex-gateway` beside the running test binary.
    static func binaryPath() throws -> String {
        if let path = ProcessInfo.processInfo.environment["CONVEX_GATEWAY_BINARY"], !path.isEmpty { return path }
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let path = URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("convex-gateway").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("convex-gateway not found at \(path): build it first with `swift build --build-tests`")
        }
        return path
    }

    /// The test's environment without anything that would configure the gateway.
    static var inheritedEnvironment: [String: String] {
        ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("GATEWAY_") && !$0.key.hasPrefix("CONVEX_") && $0.key != "LOG_LEVEL"
        }
    }

    /// The end of the gateway's log (where a crash or a sanitizer's report is), for a failure message.
    static func report(_ log: String) -> String {
        let end = log.suffix(20_000)
        return end.isEmpty ? "" : "; the end of its log:\n\(end)"
    }

    /// SIGTERM, then up to 15 s for a graceful exit (SIGKILL after that). Returns the exit status.
    func stop() async -> Int32 {
        await process.stop(grace: .seconds(15))
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Open descriptors of the gateway process.
    var descriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// Client connections whose socket the gateway process still holds: entries of the TCP tables of its network
    /// namespace on its port, other than the listening one, that still belong to a descriptor (a socket the gateway
    /// has closed, in FIN-WAIT or TIME-WAIT, has inode 0).
    var acceptedSocketCount: Int {
        let localPort = ":" + String(port, radix: 16, uppercase: true).leftPadded(to: 4)
        var count = 0
        for table in ["tcp", "tcp6"] {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/net/\(table)", encoding: .utf8) else { continue }
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[1].hasSuffix(localPort), fields[3] != "0A", fields[9] != "0" else {
                    continue
                }
                count += 1
            }
        }
        return count
    }

    /// Resident memory of the gateway process in bytes.
    var residentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return -1 }
        let kib = line.split(separator: " ").compactMap { Int($0) }.first ?? -1
        return kib * 1024
    }

    /// Descriptor count and resident memory of the gateway process.
    struct Usage: CustomStringConvertible {
        var descriptors: Int
        var residentBytes: Int
        var description: String { "\(descriptors) fds, \(residentBytes >> 20) MiB RSS" }
    }

    func usage() -> Usage { Usage(descriptors: descriptorCount, residentBytes: residentBytes) }

    /// Whether the memory bound is checked: not when `scripts/sanitize` built the executable
    /// (`CONVEX_TEST_SANITIZER`), whose memory then holds the sanitizer's own (shadow memory; AddressSanitizer keeps
    /// freed blocks in a 256 MiB quarantine), not only the gateway's.
    static let checksMemory = ProcessInfo.processInfo.environment["CONVEX_TEST_SANITIZER"] == nil

    /// Waits (up to `settle`) for the descriptor count to come back to `baseline` (plus `slack`), then checks it
    /// and the memory growth against the bounds.
    func expectNoLeaks(
        since baseline: Usage, descriptorSlack: Int = 3, memoryGrowthLimit: Int = 32 << 20,
        settle: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        // Checked below: a count that never comes back fails there.
        _ = await eventually(timeout: settle) { descriptorCount <= baseline.descriptors + descriptorSlack }
        let after = usage()
        if ProcessInfo.processInfo.environment["HOSTILE_VERBOSE"] != nil {
            print("gateway usage: before \(baseline), after \(after)")
        }
        #expect(
            after.descriptors <= baseline.descriptors + descriptorSlack,
            "descriptors leaked: before \(baseline), after \(after)", sourceLocation: sourceLocation)
        #expect(
            !Self.checksMemory || after.residentBytes - baseline.residentBytes <= memoryGrowthLimit,
            "memory grew beyond \(memoryGrowthLimit >> 20) MiB: before \(baseline), after \(after)",
            sourceLocation: sourceLocation)
    }

    static func parsePort(log: String) -> Int? {
        // `http.port=8080` in text lines, `"http.port":"8080"` in JSON ones (`--log-format json`).
        guard let range = log.range(of: "http.port=") ?? log.range(of: #""http.port":""#) else { return nil }
        let digits = log[range.upperBound...].prefix { $0.isNumber }
        return Int(digits).flatMap { $0 > 0 ? $0 : nil }
    }

    /// The package's root directory: this file is `Tests/ConvexGatewayTests/Support/GatewayProcess.swift`.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
