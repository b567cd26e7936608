import Clocks

extension TestClock<Duration> {
    /// Moves the clock `step` at a time until `event` returns, and returns what it returned. A timer is armed on
    /// the task that handles a message (the deployment's identity expiry, the gateway's deadlines), which may start
    /// its sleep only after the test's first move; a later move then reaches it. At most `moves` moves.
    func advance<T: Sendable>(
        by step: Duration, moves: Int = 200, until event: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = Task { try await event() }
        let mover = Task {
            for _ in 0..<moves {
                guard !Task.isCancelled else { return }
                await advance(by: step)
                // Real time: lets the tasks woken by the move run (to the socket and back) before the next move.
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        defer { mover.cancel() }
        return try await outcome.value
    }
}
