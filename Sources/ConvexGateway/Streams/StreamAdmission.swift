/// The stream limit (`--max-streams`): an event stream holds its connection for as long as it is open, so streams may
/// take only part of `--max-connections`, and calls and `GET`s always find a connection.
extension Streams {
    /// Admits a new event stream under the limit, then starts it with `start`; a stream that does not start gives
    /// its place back.
    /// - Throws: ``GatewayError/streamLimitReached`` (503 `Overloaded`, `Retry-After`) when the limit is reached.
    func admit(
        _ start: @escaping @Sendable () async throws(GatewayError) -> GatewayOutcome
    ) throws(GatewayError) -> StageOutcome {
        let openStreams = self.openStreams
        guard openStreams.admit(limit: configuration.effectiveMaxStreams) else { throw .streamLimitReached }
        return .later { () async throws(GatewayError) -> GatewayOutcome in
            let started: GatewayOutcome
            do throws(GatewayError) {
                started = try await start()
            } catch {
                openStreams.withdraw()
                throw error
            }
            switch started {
            case .response(let refusal):
                openStreams.withdraw()
                return .response(refusal)
            case .stream(var stream):
                // Once open, the stream gives its place back when it closes (OpenStreams.closed).
                stream.notStarted = { openStreams.withdraw() }
                return .stream(stream)
            }
        }
    }
}
