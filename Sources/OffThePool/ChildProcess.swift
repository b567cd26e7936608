import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a finished child process printed, and how it ended.
public struct ChildProcessOutput: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// A child process whose end is awaited, not waited for: Foundation's `Process` reports the exit through its
/// termination handler, which resumes the tasks awaiting it. Output goes to files or to pipes read on threads of their
/// own (`run(_:arguments:…)`).
public final class ChildProcess: Sendable {
    /// The running process: its end is awaited through `exit`, never waited for.
    private nonisolated(unsafe) let process: Process
    private let exit = ExitSignal()

    /// Starts `executable` with `arguments`; `configure` sets its environment, directory and output before it runs.
    public init(
        _ executable: String, arguments: [String], configure: (Process) throws -> Void = { _ in }
    ) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try configure(process)
        let exit = exit
        process.terminationHandler = { exit.fire($0.terminationStatus) }
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { exit.status == nil }
    /// The exit status once the process has ended.
    public var status: Int32? { exit.status }

    /// Suspends until the process has ended, or `timeout` has passed (`nil`), or the task is cancelled (`nil`).
    public func exited(within timeout: Duration) async -> Int32? {
        await withTaskGroup(of: Int32?.self) { group in
            group.addTask { await self.exit.wait() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? exit.status
        }
    }

    /// SIGTERM, then SIGKILL when it has not ended within `grace`; returns its exit status (the signal's number when a
    /// signal ended it), or `-9` when it had to be killed.
    @discardableResult
    public func stop(grace: Duration = .seconds(2)) async -> Int32 {
        if isRunning { process.terminate() }
        if let status = await exited(within: grace) { return status }
        kill(pid, SIGKILL)
        _ = await exited(within: .seconds(30))
        return -9
    }

    /// Runs `executable` to its end and returns what it printed; a run that outlasts `timeout` is killed and throws
    /// an error naming the command and the time.
    public static func run(
        _ executable: String, arguments: [String], environment: [String: String]? = nil,
        directory: URL? = nil, input: [UInt8]? = nil, timeout: Duration = .seconds(120)
    ) async throws -> ChildProcessOutput {
        let output = Pipe()
        let errors = Pipe()
        let inputPipe = input.map { _ in Pipe() }
        let child = try ChildProcess(executable, arguments: arguments) { process in
            if let environment { process.environment = environment }
            if let directory { process.currentDirectoryURL = directory }
            process.standardOutput = output
            process.standardError = errors
            process.standardInput = inputPipe ?? FileHandle.nullDevice
        }
        // The pipes are read to their ends while the process runs (a full pipe would stall it), each on its own thread,
        // from before the input is written: a child that answers as it reads must not fill its output meanwhile.
        async let stdout = blocking { output.fileHandleForReading.readDataToEndOfFile() }
        async let stderr = blocking { errors.fileHandleForReading.readDataToEndOfFile() }
        if let input, let inputPipe {
            _ = try await blocking {
                inputPipe.fileHandleForWriting.write(Data(input))
                try inputPipe.fileHandleForWriting.close()
            }
        }
        guard let status = await child.exited(within: timeout) else {
            await child.stop()
            let command = ([executable] + arguments).joined(separator: " ").prefix(300)
            throw ChildProcessTimeout(description: "\(command) did not finish within \(timeout)")
        }
        return ChildProcessOutput(
            status: status, stdout: String(decoding: try await stdout, as: UTF8.self),
            stderr: String(decoding: try await stderr, as: UTF8.self))
    }
}

/// A child process that outlasted its time; it was killed.
public struct ChildProcessTimeout: Error, CustomStringConvertible {
    public let description: String
}

/// The end of a process, once: tasks awaiting it are resumed by the termination handler (or by their cancellation).
private final class ExitSignal: Sendable {
    private struct State {
        var status: Int32?
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
        var nextID = 0
    }
    private let state = Mutex(State())

    var status: Int32? { state.withLock { $0.status } }

    func fire(_ status: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int32?, Never>] in
            state.status = status
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    /// The exit status, or `nil` when the awaiting task is cancelled first.
    func wait() async -> Int32? {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                let ready: Int32?? = state.withLock { state in
                    if let status = state.status { return .some(status) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: nil)
        }
    }
}
