/// The stream limit (`--max-streams`): an event stream holds its connection for as long as it is open, so streams may
/// take only part of `--max-connections`, and calls and `GET`s always find a connection.
extension GatewayCore {
    /// Admits a new event stream under the limit, then starts it with `start`.
    /// - Throws: ``GatewayError/streamLimitReached`` (503 `Overloaded`, `Retry-After`) when the limit is reached.
    func admitStream(_ start: @escaping @Sendable () async -> GatewayOutcome) throws(GatewayError) -> GatewayHandling {
        let openStreams = self.openStreams
        guard openStreams.admit(limit: configuration.effectiveMaxStreams) else { throw .streamLimitReached }
        return .deferred {
            switch await start() {
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
