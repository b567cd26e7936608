import Foundation
import TestSupport
import Testing

/// Runs the conformance scripts in `python/` with the official Convex Python client.
enum PythonClient {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static let scriptsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "python")

    /// The interpreter from `CONVEX_TEST_PYTHON`, or the repository's `.venv`; `nil` when neither exists.
    static var interpreter: String? {
        if let env = ProcessInfo.processInfo.environment["CONVEX_TEST_PYTHON"], !env.isEmpty,
            FileManager.default.isExecutableFile(atPath: env)
        {
            return env
        }
        let venv = scriptsDirectory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".venv/bin/python").path
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : nil
    }

    static let installHint = """
        The official Convex Python client is needed for the conformance tests. Install it with `scripts/test` \
        (which creates .venv and sets CONVEX_TEST_PYTHON), or run `bash -c '. scripts/prereqs.sh; ensure_python_venv'` \
        and `export CONVEX_TEST_PYTHON=$PWD/.venv/bin/python`.
        """

    /// Runs `script` with the deployment URL and extra arguments; fails the test when Python is missing or the
    /// script does not finish within `timeout`.
    static func run(_ script: String, url: String, _ arguments: [String] = [], timeout: Duration = .seconds(120))
        async throws -> Result
    {
        guard let python = interpreter else {
            Issue.record(Comment(rawValue: installHint))
            throw PythonMissing()
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "convex-local-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = scriptsDirectory.path
        let child = try ChildProcess(
            python, arguments: ["-u", scriptsDirectory.appendingPathComponent(script).path, url] + arguments
        ) { options in
            options.directory = scriptsDirectory
            options.standardOutput = try FileHandle(forWritingTo: outURL)
            options.standardError = try FileHandle(forWritingTo: errURL)
            options.environment = environment
        }
        guard let status = await child.exited(within: timeout) else {
            // The official client may block signals in its runtime threads: SIGKILL if SIGTERM is not enough.
            await child.stop(grace: .seconds(2))
            let err = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
            Issue.record("\(script) did not finish within \(timeout); stderr:\n\(err)")
            throw ScriptTimeout()
        }
        return Result(
            status: status,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }

    struct PythonMissing: Error {}
    struct ScriptTimeout: Error {}
}

/// Expects a script to have passed, showing its output otherwise.
func expectPassed(_ result: PythonClient.Result, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(
        result.status == 0 && result.stdout.contains("OK"),
        "exit \(result.status)\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)", sourceLocation: sourceLocation)
}
