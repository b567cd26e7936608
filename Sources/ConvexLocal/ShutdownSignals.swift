import Logging
import ServiceLifecycle
import UnixSignals

/// SIGTERM and SIGINT, trapped from the moment a command starts rather than from when its `ServiceGroup` runs.
///
/// A `ServiceGroup` traps its graceful-shutdown signals only once `run()` begins; a signal that arrives earlier (while
/// a deployment starts, or just after a command has announced its port) meets the default action and kills the process
/// without a drain. Trapped here first, such a signal is held and shuts the group down gracefully as soon as it runs.
public struct ShutdownSignals: Sendable {
    private let signals: UnixSignalsSequence

    /// Traps SIGTERM and SIGINT; returns once both are registered.
    public init() async {
        signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
    }

    /// Runs `group` (configured without signals of its own), shutting it down gracefully at each trapped signal,
    /// including one that arrived before this call. `source` is the log line's: the command's module, so that a
    /// command without an embedded deployment logs no line that names one.
    public func run(_ group: ServiceGroup, logger: Logger, source: String = "ConvexLocal") async throws {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                for await signal in signals {
                    logger.notice(
                        "Signal received: shutting down gracefully", metadata: ["signal": "\(signal)"], source: source)
                    await group.triggerGracefulShutdown()
                }
            }
            try await group.run()
            tasks.cancelAll()
        }
    }
}
