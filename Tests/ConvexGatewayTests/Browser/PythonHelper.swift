import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A test-only network helper written in Python (standard library only), run as `python -c <script> <arguments>`:
/// ``RoundRobinProxy`` and ``LaggingRelay``. The script prints `<name>.port=<port>` once it listens on 127.0.0.1.
enum PythonHelper {
    /// `$CONVEX_TEST_PYTHON`, else the package's `.venv`, else `python3` on the `PATH`.
    static var command: [String] {
        if let path = ProcessInfo.processInfo.environment["CONVEX_TEST_PYTHON"], !path.isEmpty { return [path] }
        let venv = GatewayProcess.packageRoot.appendingPathComponent(".venv/bin/python").path
        if FileManager.default.isExecutableFile(atPath: venv) { return [venv] }
        return ["/usr/bin/env", "python3"]
    }

    /// Starts `script`, waits (up to 20 s) for the port it reports as `<name>.port=`, runs `body` with that port,
    /// then ends the script.
    static func run<T: Sendable>(
        _ name: String, script: String, arguments: [String], _ body: (Int) async throws -> T
    ) async throws -> T {
        let logPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(name)-\(UUID().uuidString).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let command = command
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst()) + ["-c", script] + arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardError = process.standardOutput
        try process.run()
        defer { stop(process) }
        var port: Int?
        _ = await eventually(timeout: .seconds(20)) {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let range = log.range(of: "\(name).port=") {
                port = Int(log[range.upperBound...].prefix { $0.isNumber })
            }
            return port != nil || !process.isRunning
        }
        guard let port else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw TestFailure("\(name) (\(command.joined(separator: " "))) did not start; its output:\n\(log)")
        }
        let result = try await body(port)
        #expect(process.isRunning, "\(name) died during the test; its output:\n\(logPath)")
        return result
    }

    /// SIGTERM (the scripts unblock it: a child inherits the blocked signals of the thread that started it), SIGKILL
    /// after 2 s.
    private static func stop(_ process: Process) {
        if process.isRunning { process.terminate() }
        let deadline = ContinuousClock.now + .seconds(2)
        while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
