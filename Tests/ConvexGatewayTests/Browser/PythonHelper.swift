import Foundation
import TestSupport
import Testing

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
        let child = try ChildProcess(command[0], arguments: Array(command.dropFirst()) + ["-c", script] + arguments) {
            options in
            options.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            options.standardError = options.standardOutput
        }
        var port: Int?
        do {
            _ = await eventually(timeout: .seconds(20)) {
                let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                if let range = log.range(of: "\(name).port=") {
                    port = Int(log[range.upperBound...].prefix { $0.isNumber })
                }
                return port != nil || !child.isRunning
            }
            guard let port else {
                let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                let commandLine = command.joined(separator: " ")
                throw TestFailure("\(name) (\(commandLine)) did not start within 20 s; its output:\n\(log)")
            }
            let result = try await body(port)
            if !child.isRunning {
                let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                Issue.record("\(name) died during the test; its output:\n\(log)")
            }
            // SIGTERM (the scripts unblock it: a child inherits the blocked signals of the thread that started it),
            // SIGKILL after 2 s.
            await child.stop(grace: .seconds(2))
            return result
        } catch {
            await child.stop(grace: .seconds(2))
            throw error
        }
    }
}
