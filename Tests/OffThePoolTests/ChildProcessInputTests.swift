import OffThePool
import Testing

/// A child process's standard input, written by ``ChildProcess/run(_:arguments:environment:directory:input:timeout:)``.
@Suite struct ChildProcessInputTests {
    @Test func aChildReadsItsWholeInput() async throws {
        let input = Array(String(repeating: "line of input\n", count: 10_000).utf8)  // more than a pipe holds
        let run = try await ChildProcess.run("/bin/cat", arguments: [], input: input)
        #expect(run.status == 0)
        #expect(Array(run.stdout.utf8) == input)
    }

    /// A child that exits without reading its input closes the pipe under the write: the run still ends with its
    /// status and output (the write fails with EPIPE; SIGPIPE, whose default ends this process, is blocked there).
    @Test func aChildThatExitsWithoutReadingItsInputEndsTheRunWithItsStatus() async throws {
        let input = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        let run = try await ChildProcess.run(
            "/bin/sh", arguments: ["-c", "echo leaving; exit 3"], input: input)
        #expect(run.status == 3)
        #expect(run.stdout == "leaving\n")
    }
}
