/// The one "now or later" of the gateway: a response now (on the server's own thread), or later (in a task: a response
/// or an event stream). What a stage (Pipeline/) answers, and what ``GatewayCore/handle(_:)`` hands the server.
///
/// A stage throws the ``GatewayError`` to answer instead, now or later; GatewayCore.complete (Finish.swift) turns every
/// outcome and every error into the response, so what `handle` hands the server later does not throw.
package enum GatewayAnswer: Sendable {
    case now(GatewayResponse)
    case later(@Sendable () async throws(GatewayError) -> GatewayOutcome)
}

/// How a deferred request ends: a response, or an event stream whose sink the server provides.
package enum GatewayOutcome: Sendable {
    case response(GatewayResponse)
    case stream(EventStreamStart)
}

/// Starting an SSE stream: the server sends the headers and `preamble`, then calls `attach` with the stream's
/// output; when the client goes away (or the stream ends) it calls `detach` with the same output.
package struct EventStreamStart: Sendable {
    package var headers: [(String, String)]
    package var preamble: [UInt8]
    package var attach: @Sendable (any EventStreamOutput) -> Void
    package var detach: @Sendable (any EventStreamOutput) -> Void
    /// Called instead of `attach` when the stream could not start (its client left while it waited).
    package var notStarted: @Sendable () -> Void = {}
}
