import Foundation

// The one place where blocking calls are allowed (`scripts/check-blocking` enforces it, in Sources and Tests): each
// runs on a thread of its own, never on Swift concurrency's cooperative pool. That pool has one thread per core (two
// on the project's machines, one in a container limited to one CPU); one blocked thread there halves the progress of
// every other task in the process, two stop them: a server's requests, a client's heartbeats, a test run's other
// tests.

/// Runs blocking work (a socket read, a pipe read to its end, a C call that joins threads) on a thread of its own and
/// returns its result; the calling task is suspended meanwhile, holding no thread.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}

/// ``blocking(_:)`` for work that cannot fail.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: body())
        }
        thread.start()
    }
}
