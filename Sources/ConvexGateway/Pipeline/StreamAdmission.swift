import HTTPFields

/// The stream limit (`--max-streams`): an event stream holds its connection for as long as it is open, so streams may
/// take only part of `--max-connections`, and calls and `GET`s always find a connection.
extension Streams {
    /// Admits a new event stream under the limit, then starts it with `start`; a stream that does not start gives
    /// its place back.
    /// - Throws: ``GatewayError/streamLimitReached`` (503 `Overloaded`, `Retry-After`) when the limit is reached.
    func admit(
        _ client: ClientKey, _ start: @escaping @Sendable () async throws(GatewayError) -> EventStreamStart
    ) throws(GatewayError) -> GatewayAnswer {
        let openStreams = self.openStreams
        switch openStreams.admit(limit: configuration.effectiveMaxStreams, client: client) {
        case .gateway?: throw .streamLimitReached
        case .client(let limit)?: throw .tooManyStreams(limit: limit)
        case nil: break
        }
        return .later { () async throws(GatewayError) -> GatewayOutcome in
            var stream: EventStreamStart
            do throws(GatewayError) {
                stream = try await start()
            } catch {
                openStreams.withdraw(client)
                throw error
            }
            // Once open, the stream gives its place back when it closes (OpenStreams.closed); one that never opens
            // (its client left while it waited), here.
            stream.notStarted = { openStreams.withdraw(client) }
            return .stream(stream)
        }
    }
}

extension GatewayError {
    /// The client holds as many streams as one client may (`--max-streams-per-client`).
    static func tooManyStreams(limit: Int) -> GatewayError {
        GatewayError(
            code: .tooManyStreams,
            message:
                "This client already holds \(limit) open event streams, as many as one client may "
                + "(--max-streams-per-client); close one, or put the live queries on one stream "
                + "(/subscribe?sub.<id>=…)",
            headers: [(HeaderName.retryAfter, "5")])
    }
}
