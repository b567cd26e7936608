import Clocks

extension TestClock<Duration> {
    /// Moves the clock by `first`, then `step` at a time, until `event` returns, and returns what it returned. A
    /// timer is armed on the task that handles a message (the deployment's identity expiry, the gateway's deadlines),
    /// which may start its sleep only after the first move; a later small move then reaches it. At most `moves` small
    /// moves, so the clock never runs far past `first` (tokens that live an hour stay valid).
    @discardableResult
    public func advance<T: Sendable>(
        by first: Duration, thenBy step: Duration = .seconds(1), moves: Int = 600,
        until event: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = Task { try await event() }
        let mover = Task {
            await advance(by: first)
            for _ in 0..<moves {
                // Real time: lets the tasks woken by a move run (to the socket and back) before the next move.
                try? await Task.sleep(for: .milliseconds(50))
                guard !Task.isCancelled else { return }
                await advance(by: step)
            }
        }
        defer { mover.cancel() }
        return try await outcome.value
    }
}
