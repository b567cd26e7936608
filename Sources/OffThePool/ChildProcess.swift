import CSpawn
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

/// How a child process starts: its environment, directory and standard streams.
public struct ChildProcessOptions {
    /// The environment; `nil`: this process's.
    public var environment: [String: String]?
    /// The working directory; `nil`: this process's.
    public var directory: URL?
    /// Standard input, output and error; `nil`: `/dev/null`.
    public var standardInput: FileHandle?
    public var standardOutput: FileHandle?
    public var standardError: FileHandle?

    public init() {}
}

/// A child process whose end is awaited, not waited for: a thread of its own waits for the exit (`waitpid`) and
/// resumes the tasks awaiting it. Output goes to files or to pipes read on threads of their own (`run(_:arguments:…)`).
///
/// Started with `posix_spawn` (CSpawn), not Foundation's `Process`: on Linux, `Process.run()` lists `/proc/self/fd`
/// by copying each directory entry's whole 256-byte name, which can read past the end of readdir's buffer and crash
/// the parent (swift-corelibs-foundation's `findMaximumOpenFromProcSelfFD`; seen in this project's test runs, which
/// start hundreds of children beside thousands of sockets).
public final class ChildProcess: Sendable {
    /// The child's process id.
    public let pid: Int32
    private let exit = ExitSignal()

    /// Starts `executable` (a path, or a name looked up on the `PATH`) with `arguments`; `configure` sets its
    /// environment, directory and standard streams.
    /// - Throws: ``ChildProcessStartFailure`` naming the command and the system's reason.
    public init(
        _ executable: String, arguments: [String], configure: (inout ChildProcessOptions) throws -> Void = { _ in }
    ) throws {
        var options = ChildProcessOptions()
        try configure(&options)
        let environment = (options.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = Self.withCStrings([executable] + arguments) { argv in
            Self.withCStrings(environment) { envp in
                cspawn_start(
                    &pid, executable, argv, envp, options.directory?.path,
                    options.standardInput?.fileDescriptor ?? -1, options.standardOutput?.fileDescriptor ?? -1,
                    options.standardError?.fileDescriptor ?? -1)
            }
        }
        guard result == 0 else {
            throw ChildProcessStartFailure(
                description: "\(executable) did not start: \(String(cString: strerror(result)))")
        }
        self.pid = pid
        let child = pid
        let exit = exit
        // The one blocking wait for this child, on a thread of its own.
        let waiter = Thread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            // As Foundation's terminationStatus: the exit code, or the number of the signal that ended it.
            let signal = status & 0x7f
            exit.fire(signal == 0 ? (status >> 8) & 0xff : signal)
        }
        waiter.start()
    }

    /// Calls `body` with a NULL-terminated array of C strings copied from `strings`.
    private static func withCStrings<R>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R
    ) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for copy in copies { free(copy) } }
        return copies.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

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
        if isRunning { kill(pid, SIGTERM) }
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
        let child = try ChildProcess(executable, arguments: arguments) { options in
            options.environment = environment
            options.directory = directory
            options.standardOutput = output.fileHandleForWriting
            options.standardError = errors.fileHandleForWriting
            options.standardInput = inputPipe?.fileHandleForReading
        }
        // The child holds its own copies of the pipes' other ends: closing ours lets the reads below end with it.
        try output.fileHandleForWriting.close()
        try errors.fileHandleForWriting.close()
        try inputPipe?.fileHandleForReading.close()
        // The pipes are read to their ends while the process runs (a full pipe would stall it), each on its own thread,
        // from before the input is written: a child that answers as it reads must not fill its output meanwhile.
        async let stdout = blocking { output.fileHandleForReading.readDataToEndOfFile() }
        async let stderr = blocking { errors.fileHandleForReading.readDataToEndOfFile() }
        if let input, let inputPipe {
            _ = try await blocking {
                defer { try? inputPipe.fileHandleForWriting.close() }
                try Self.write(input, toPipe: inputPipe.fileHandleForWriting.fileDescriptor)
            }
        }
        guard let status = await child.exited(within: timeout) else {
            await child.stop()
            let command = ([executable] + arguments).joined(separator: " ").prefix(300)
            throw ChildProcessTimeout(description: "\(command) did not finish within \(timeout)")
        }
        return ChildProcessOutput(
            status: status, stdout: String(decoding: await stdout, as: UTF8.self),
            stderr: String(decoding: await stderr, as: UTF8.self))
    }
}

extension ChildProcess {
    /// Writes `bytes` to a pipe whose reader is a child, on a thread of `blocking`'s own: all of them, or as many as
    /// the child read before it closed its end (it exited without reading its whole input, which its status and
    /// output then tell). SIGPIPE is blocked on this thread, so such a write fails with EPIPE instead of the signal
    /// ending this process; the signal stays pending on the thread, which ends after it.
    @available(*, noasync)
    fileprivate static func write(_ bytes: [UInt8], toPipe fd: Int32) throws {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written >= 0 {
                offset += written
            } else if errno == EPIPE {
                return
            } else if errno != EINTR {
                throw ChildProcessInputFailure(description: "writing a child's input failed: errno \(errno)")
            }
        }
    }
}

/// A child process's input could not be written (other than the child closing it unread).
public struct ChildProcessInputFailure: Error, CustomStringConvertible {
    public let description: String
}

/// A child process that could not be started.
public struct ChildProcessStartFailure: Error, CustomStringConvertible {
    public let description: String
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
