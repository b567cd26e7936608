import ConvexValues

/// The gateway's own routes that need more than a fixed answer: readiness and stream tickets.
extension GatewayCore {
    func readiness() async -> GatewayResponse {
        let (_, upstream) = pool.upstream(for: .anonymous)
        do {
            try await upstream.waitUntilConnected(timeout: .seconds(1))
            return .json(Array(#"{"status":"ready"}"#.utf8))
        } catch {
            return errorResponse(.upstreamUnavailable("not connected"), format: configuration.defaultFormat)
        }
    }

    /// `POST /stream-tickets`: 201 with a ticket for the caller's token (Access/StreamTickets.swift).
    /// - Throws: 401 without a token, or for one a ticket cannot be made from.
    func streamTicket(for request: ParsedRequest) throws(GatewayError) -> GatewayResponse {
        guard case .bearer(let token) = request.identity else {
            throw GatewayError.unauthenticated(
                "A stream ticket needs the caller's token: send 'Authorization: Bearer <JWT>' or the auth cookie")
        }
        let issued = try credentials.tickets.issue(for: token, now: credentials.now())
        // Written out: `expiresAt` is a whole number of milliseconds, never a float's exponent form.
        let body =
            #"{"ticket":"# + String(decoding: ConvexValue.string(issued.ticket).convexJSON(), as: UTF8.self)
            + #","expiresAt":\#(issued.expiresAt)}"#
        var response = GatewayResponse.json(Array(body.utf8), status: 201)
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }
}
