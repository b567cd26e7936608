import TestSupport
import Testing

/// Polls `condition` with TestSupport's `eventually` for up to `timeout`; records an issue at the caller and throws if
/// it never holds.
func waitUntil(
    timeout: Duration = .seconds(60), _ condition: () throws -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    guard try await eventually(timeout: timeout, condition) else {
        Issue.record("waitUntil gave up after \(timeout)", sourceLocation: sourceLocation)
        throw WaitTimeout()
    }
}

struct WaitTimeout: Error {}
