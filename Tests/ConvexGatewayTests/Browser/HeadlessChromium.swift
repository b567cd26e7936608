import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Headless Chromium (Debian's `chromium`; `scripts/prereqs.sh` installs it) driven over the DevTools protocol.
/// Each run has its own profile directory; the browser and every process it started are gone when ``run(_:)``
/// returns.
enum HeadlessChromium {
    /// `CONVEX_TEST_CHROMIUM`, or the first Chromium on the usual paths; `nil` when there is none.
    static var binaryPath: String? {
        if let path = ProcessInfo.processInfo.environment["CONVEX_TEST_CHROMIUM"], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        return ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static let installHint = """
        Headless Chromium is needed for the browser tests. Install it with `scripts/test` (or \
        `bash -c '. scripts/prereqs.sh; ensure_chromium'`), or point CONVEX_TEST_CHROMIUM at a Chromium binary.
        """

    /// Starts Chromium, runs `body` with its DevTools connection, then closes it (SIGKILL after 5 s) and removes its
    /// profile.
    static func run<T: Sendable>(_ body: (DevToolsConnection) async throws -> T) async throws -> T {
        guard let binary = binaryPath else {
            Issue.record(Comment(rawValue: installHint))
            throw TestFailure("no Chromium")
        }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("convex-chromium-\(UUID())")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: profile) }
        let logURL = profile.appendingPathComponent("chromium.log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)

        let arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--remote-debugging-port=0", "--user-data-dir=\(profile.path)",
            // The WebSocket client sends `Origin: ws://127.0.0.1`, which DevTools refuses unless allowed.
            "--remote-allow-origins=ws://127.0.0.1",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
            "--disable-background-networking", "--disable-component-update",
            // Pages in the background must not be throttled: several run at once.
            "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows", "about:blank",
        ]
        let browser = try ChildProcess(binary, arguments: arguments) { options in
            options.standardError = try FileHandle(forWritingTo: logURL)
        }
        do {
            let result = try await drive(browser, profile: profile, logURL: logURL, body)
            await stop(browser)
            return result
        } catch {
            await stop(browser)
            throw error
        }
    }

    private static func drive<T: Sendable>(
        _ browser: ChildProcess, profile: URL, logURL: URL, _ body: (DevToolsConnection) async throws -> T
    ) async throws -> T {

        let webSocketURL = try await devToolsURL(profile: profile, browser: browser, logURL: logURL)
        return try await DevToolsConnection.withConnection(url: webSocketURL) { connection in
            let result = try await body(connection)
            // Closing the browser also ends the DevTools socket.
            _ = try? await connection.send("Browser.close", timeout: .seconds(5))
            return result
        }
    }

    /// Waits (up to 30 s) for Chromium to write `DevToolsActivePort`: its port, then the browser's WebSocket path.
    private static func devToolsURL(profile: URL, browser: ChildProcess, logURL: URL) async throws -> String {
        let file = profile.appendingPathComponent("DevToolsActivePort")
        var url: String?
        _ = await eventually(timeout: .seconds(30)) {
            let lines = ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n")
            if lines.count >= 2, let port = Int(lines[0]) { url = "ws://127.0.0.1:\(port)\(lines[1])" }
            return url != nil || !browser.isRunning
        }
        if let url { return url }
        let log = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        throw TestFailure("Chromium did not open its DevTools port within 30 s; its log:\n\(log.suffix(4000))")
    }

    /// Ends the browser: SIGTERM, SIGKILL after 5 s, then SIGKILL to any of its helper processes (renderers,
    /// zygotes) still running.
    private static func stop(_ browser: ChildProcess) async {
        let helpers = descendants(of: browser.pid)
        await browser.stop(grace: .seconds(5))
        for helper in helpers where !helper.commandLine.isEmpty && commandLine(of: helper.pid) == helper.commandLine {
            kill(helper.pid, SIGKILL)
        }
    }

    /// Every process below `root`, with its command line (to recognise it later, should its id be reused).
    static func descendants(of root: pid_t) -> [(pid: pid_t, commandLine: [UInt8])] {
        var children: [pid_t: [pid_t]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After the command name in parentheses: state, then the parent's id.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { children[parent, default: []].append(pid) }
        }
        var found: [(pid_t, [UInt8])] = []
        var queue = children[root] ?? []
        while let pid = queue.popLast() {
            found.append((pid, commandLine(of: pid)))
            queue += children[pid] ?? []
        }
        return found
    }

    static func commandLine(of pid: pid_t) -> [UInt8] {
        FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map(Array.init) ?? []
    }
}

extension Trait where Self == ConditionTrait {
    /// The browser suites start Chromium and real gateway processes: run in parallel with the whole suite on two
    /// cores, they starve its timing-sensitive tests (token expiry, rate limits). `scripts/test` runs them on their
    /// own after the parallel run, with `CONVEX_TEST_BROWSER=1`.
    static var browser: Self {
        .enabled(if: ProcessInfo.processInfo.environment["CONVEX_TEST_BROWSER"] == "1", "run alone by scripts/test")
    }
}
