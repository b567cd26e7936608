import TestSupport
import Testing

/// Waits until `condition` holds, polling with TestSupport's `eventually`; records an issue at the caller when it gives
/// up, so a wait that never ends fails the test where it was asked for.
func waitUntil(
    timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async -> Bool
) async {
    if await !eventually(timeout: timeout, condition) {
        Issue.record("waitUntil gave up after \(timeout)", sourceLocation: sourceLocation)
    }
}
