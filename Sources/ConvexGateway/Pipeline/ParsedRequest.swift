import ConvexSyncProtocol
import ConvexValues
import Foundation
import HTTPFields

/// A request as the pipeline understands it, built once by ``init(_:defaultFormat:credentials:)``: the route (with its
/// function path), the query string decoded to text, who is calling, and the output format. Every later stage reads this
/// value; none goes back to the raw request text.
struct ParsedRequest: Sendable {
    var request: GatewayRequest
    var route: Route
    /// The query string, decoded once; values are still text (the argument stage types them). A stream ticket is
    /// not among them: it was read into ``identity``.
    var query: QueryString
    /// Who the call acts as upstream (anonymous for the gateway's own routes), from ``CallerCredentials``.
    var identity: UpstreamIdentity
    /// Whom the request's share of the gateway's bounds belongs to: the signed-in user, else the client address.
    var client: ClientKey
    /// The client's address, signed in or not (``ClientIdentification/addressKey(of:)``).
    var address: ClientKey
    var format: OutputFormat
    /// `Accept: text/event-stream` was sent.
    var wantsEventStream: Bool
    /// A `/subscribe` stream asked for changes as JSON Patches (`delta=json-patch`, Delta/ValueDelta.swift).
    var wantsPatches = false
    /// `Convex-Min-Timestamp`: the oldest snapshot the caller accepts (ReadYourWrites/SnapshotFloor.swift).
    var minTimestamp: ConvexTimestamp?

    var method: String { request.method }

    /// Parses `request`; `credentials` says where the caller's token may come from.
    /// - Throws: the 404/400/405/401 that the request deserves, in that order of checks.
    init(_ request: GatewayRequest, defaultFormat: OutputFormat, credentials: CallerCredentials) throws(GatewayError) {
        try self.init(
            request, route: Route(rawPath: request.rawPath[...]), defaultFormat: defaultFormat, credentials: credentials
        )
    }

    /// Parses `request`, whose `route` the caller has read from its raw path already.
    init(
        _ request: GatewayRequest, route: Route, defaultFormat: OutputFormat, credentials: CallerCredentials
    ) throws(GatewayError) {
        self.route = route
        // On a multi-subscription stream (or a batch), a bad `sub.<id>` or `args.<id>` names its subscription.
        let many = StreamSubscriptions.Kind(route)
        query = try QueryString(raw: request.rawQuery?[...]) { error, parameter in
            many?.naming(error, parameter: parameter) ?? error
        }
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
        // On routes that take a ticket, `ticket` is the request's own parameter: no later stage reads it as an
        // argument.
        var ticket: String?? = nil
        if route.takesTicket {
            ticket = try CallerCredentials.ticket(in: query.values(named: CallerCredentials.ticketParameter))
            query.parameters.removeAll { $0.name == CallerCredentials.ticketParameter }
        }
        identity = route.actsForCaller ? try credentials.identity(of: request, ticket: ticket) : .anonymous
        client = credentials.clients.client(of: request, identity: identity)
        address = credentials.clients.addressKey(of: request)
        minTimestamp = try SnapshotFloor.minTimestamp(request.header(HeaderName.convexMinTimestamp))
        if route.isStream {
            // Like `ticket`, `delta` on a stream route is the stream's own parameter, never a function argument.
            wantsPatches = try ValueDelta.wantsPatches(query.values(named: ValueDelta.parameter))
            query.parameters.removeAll { $0.name == ValueDelta.parameter }
        }
        wantsEventStream = Accept.acceptsEventStream(request.header(HeaderName.accept))
        self.request = request
    }
}
