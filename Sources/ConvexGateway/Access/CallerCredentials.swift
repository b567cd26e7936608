import Foundation
import HTTPFields

/// Where a request's caller identity comes from, first match wins: the `Authorization` header, then a stream
/// ticket (`?ticket=` on the stream routes, whose `EventSource` cannot send headers), then the auth cookie (when one
/// is configured, so same-origin pages and `EventSource(url, {withCredentials: true})` carry the user). Each gives
/// the same bearer identity, so streams opened either way share subscriptions and end alike when the token expires.
/// A call that changes state with the cookie alone has passed the access stage's ``CrossSiteCheck`` first.
struct CallerCredentials: Sendable {
    /// The cookie holding the caller's JWT, if the gateway reads one.
    var cookieName: String?
    var tickets: StreamTickets
    /// The wall clock in Unix milliseconds (tests advance it).
    var now: @Sendable () -> Int64
    /// Which client a request comes from, for the shares of the gateway's bounds.
    var clients = ClientIdentification(trustedProxies: [])

    /// The query parameter that carries a stream ticket.
    static let ticketParameter = "ticket"

    /// The stream ticket among a request's query parameters (the values of every `ticket`), `nil` without one.
    /// - Throws: 400 for `ticket` given more than once.
    static func ticket(in values: [String?]) throws(GatewayError) -> String?? {
        guard values.count <= 1 else {
            throw GatewayError.badRequest("Give 'ticket' once", code: .badRequest)
        }
        return values.first
    }

    /// The identity `request` acts as, on a route that acts for the caller (`ticket`: the request's stream ticket,
    /// ``ticket(in:)``, on the routes that take one).
    /// - Throws: 401 for an `Authorization` header that is not `Bearer <token>`, a malformed token in the header or
    ///   the cookie, the cookie sent twice with different values, or a ticket that does not open.
    func identity(of request: GatewayRequest, ticket: String??) throws(GatewayError) -> UpstreamIdentity {
        if let authorization = request.header(HeaderName.authorization) {
            return try Self.identity(authorization: authorization)
        }
        if let ticket {
            guard let ticket, !ticket.isEmpty else {
                throw GatewayError.unauthenticated("Malformed stream ticket; get one from POST /stream-tickets")
            }
            return .bearer(try tickets.open(ticket, now: now()))
        }
        if let cookieName {
            // Two of them (one set by a sibling subdomain for the parent domain, say): neither is taken for the user.
            let values = CookieHeader.values(named: cookieName, in: request.header(HeaderName.cookie))
            if values.contains(where: { $0 != values[0] }) {
                throw GatewayError.unauthenticated(
                    "The '\(cookieName)' cookie was sent more than once, with different values; clear it and sign in "
                        + "again")
            }
            if let value = values.first, !value.isEmpty {
                return .bearer(try Self.token(value, malformed: "Malformed token in the '\(cookieName)' cookie"))
            }
        }
        return .anonymous
    }

    /// The caller identity an `Authorization` header gives: `Bearer <JWT>` is a user.
    /// - Throws: 401 for any other form or a malformed token.
    static func identity(authorization: String) throws(GatewayError) -> UpstreamIdentity {
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw GatewayError.unauthenticated("Unsupported Authorization header; send 'Authorization: Bearer <JWT>'")
        }
        return .bearer(try token(parts[1], malformed: "Malformed bearer token"))
    }

    /// A token as sent, trimmed: printable ASCII without spaces.
    private static func token(_ text: Substring, malformed: String) throws(GatewayError) -> String {
        let token = text.trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw GatewayError.unauthenticated(malformed)
        }
        return token
    }
}
