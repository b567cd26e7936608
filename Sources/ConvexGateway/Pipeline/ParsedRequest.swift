import ConvexSyncProtocol
import Foundation

/// A request as the pipeline understands it, built once by ``init(_:defaultFormat:)``: the route (with its function
/// path), the query string decoded to text, who is calling, and the output format. Every later stage reads this
/// value; none goes back to the raw request text.
struct ParsedRequest: Sendable {
    var request: GatewayRequest
    var route: Route
    /// The query string, decoded once; values are still text (the argument stage types them).
    var query: QueryString
    /// Who the call acts as upstream (anonymous for the gateway's own routes).
    var identity: UpstreamIdentity
    var format: OutputFormat
    /// `Accept: text/event-stream` was sent.
    var wantsEventStream: Bool

    var method: String { request.method }

    /// Parses `request`.
    /// - Throws: the 404/400/405/401 that the request deserves, in that order of checks.
    init(_ request: GatewayRequest, defaultFormat: OutputFormat) throws(GatewayError) {
        route = try Route(rawPath: request.rawPath[...])
        query = try QueryString(raw: request.rawQuery?[...])
        let formats = query.values(named: "format")
        if let last = formats.last {
            guard formats.count == 1, let text = last else {
                throw GatewayError.badRequest(
                    "Give 'format' once, as format=plain, clean or encoded", code: .invalidFormat)
            }
            format = try OutputFormat(parameter: text)
        } else {
            format = defaultFormat
        }
        guard route.allowedMethods.contains(request.method) else {
            throw GatewayError.methodNotAllowed(request.method, allowed: route.allowedMethods)
        }
        identity =
            !route.actsAsCaller ? .anonymous : try Self.identity(authorization: request.header("authorization"))
        wantsEventStream = Self.acceptsEventStream(request.header("accept"))
        self.request = request
    }

    /// The caller identity an `Authorization` header gives: none is anonymous, `Bearer <JWT>` a user.
    /// - Throws: 401 for any other form or a malformed token.
    static func identity(authorization: String?) throws(GatewayError) -> UpstreamIdentity {
        guard let authorization else { return .anonymous }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw GatewayError.unauthenticated("Unsupported Authorization header; send 'Authorization: Bearer <JWT>'")
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw GatewayError.unauthenticated("Malformed bearer token")
        }
        return .bearer(token)
    }

    /// Whether an `Accept` header asks for Server-Sent Events.
    static func acceptsEventStream(_ accept: String?) -> Bool {
        accept?.lowercased().contains("text/event-stream") == true
    }
}
