/// The stream limit (`--max-streams`): an event stream holds its connection for as long as it is open, so streams may
/// take only part of `--max-connections`, and calls and `GET`s always find a connection.
extension Streams {
    /// Admits a new event stream under the limit, then starts it with `start`; a stream that does not start gives
    /// its place back.
    /// - Throws: ``GatewayError/streamLimitReached`` (503 `Overloaded`, `Retry-After`) when the limit is reached.
    func admit(
        _ start: @escaping @Sendable () async throws(GatewayError) -> EventStreamStart
    ) throws(GatewayError) -> GatewayAnswer {
        let openStreams = self.openStreams
        guard openStreams.admit(limit: configuration.effectiveMaxStreams) else { throw .streamLimitReached }
        return .later { () async throws(GatewayError) -> GatewayOutcome in
            var stream: EventStreamStart
            do throws(GatewayError) {
                stream = try await start()
            } catch {
                openStreams.withdraw()
                throw error
            }
            // Once open, the stream gives its place back when it closes (OpenStreams.closed); one that never opens
            // (its client left while it waited), here.
            stream.notStarted = { openStreams.withdraw() }
            return .stream(stream)
        }
    }
}
