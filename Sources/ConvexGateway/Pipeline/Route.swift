import ConvexSyncProtocol

/// What a request path names: a function call or stream, or one of the gateway's own routes.
enum Route: Equatable, Sendable {
    case query(UdfPath)
    /// `GET /query?q.<id>=…`: many queries read at one snapshot (Pipeline/BatchQuery.swift).
    case queryMany
    case mutation(UdfPath)
    case action(UdfPath)
    case subscribe(UdfPath)
    /// `/subscribe?sub.<id>=…`: many subscriptions on one stream (Pipeline/StreamSubscriptions.swift).
    case subscribeMany
    /// `POST /stream-tickets`: a ticket for the caller's token (Access/StreamTickets.swift).
    case streamTickets
    case health, ready, metrics, openAPI
    /// `/client.js`, the browser client (ClientScript.swift).
    case clientScript

    static let queryTemplate = "/query/{function}"

    /// The route's template, used as the metrics label.
    var template: String {
        switch self {
        case .query: Self.queryTemplate
        case .queryMany: "/query"
        case .mutation: "/mutation/{function}"
        case .action: "/action/{function}"
        case .subscribe: "/subscribe/{function}"
        case .subscribeMany: "/subscribe"
        case .streamTickets: "/stream-tickets"
        case .health: "/healthz"
        case .ready: "/readyz"
        case .metrics: "/metrics"
        case .openAPI: "/openapi.yaml"
        case .clientScript: "/client.js"
        }
    }

    /// The methods the route answers.
    var allowedMethods: [String] {
        switch self {
        case .query: ["GET", "HEAD", "POST"]
        case .queryMany: ["GET", "HEAD"]
        case .mutation, .action: ["POST"]
        case .subscribe, .subscribeMany: ["GET"]
        case .streamTickets: ["POST"]
        case .health, .ready, .metrics, .openAPI, .clientScript: ["GET", "HEAD"]
        }
    }

    /// The function the route calls, if any.
    var function: UdfPath? {
        switch self {
        case .query(let path), .mutation(let path), .action(let path), .subscribe(let path): path
        case .queryMany, .subscribeMany, .streamTickets, .health, .ready, .metrics, .openAPI, .clientScript: nil
        }
    }

    /// Whether the route acts as the caller (so it reads credentials): the function routes, the batch query, every
    /// stream route, and the ticket route.
    var actsForCaller: Bool {
        function != nil || takesTicket || self == .streamTickets || self == .queryMany
    }

    /// The event-stream routes, whose templates start with `/subscribe`.
    var isStream: Bool {
        template.hasPrefix("/subscribe")
    }

    /// Whether a `?ticket=` authenticates the request: the stream routes (an `EventSource` cannot send an
    /// `Authorization` header).
    var takesTicket: Bool { isStream }

    /// What the access stage (Access/AccessControl.swift) asks of a route: whether it needs the API key, and whether
    /// the rate limit counts it.
    enum AccessClass: Sendable {
        /// Probes, the public contract and the browser client: no API key, no rate limit.
        case open
        /// The gateway's own protected routes (`/metrics`, and any path that matches no route): the API key only.
        case keyed
        /// The API key, and the rate limit counts it (`POST /stream-tickets`).
        case rateLimited
        /// A function call or stream, acting for the caller: the API key, and the rate limit counts it.
        case functionCall

        var needsAPIKey: Bool { self != .open }
        var isRateLimited: Bool { self == .rateLimited || self == .functionCall }
    }

    var accessClass: AccessClass {
        switch self {
        case .health, .ready, .openAPI, .clientScript: .open
        case .metrics: .keyed
        case .streamTickets: .rateLimited
        case .query, .queryMany, .mutation, .action, .subscribe, .subscribeMany: .functionCall
        }
    }

    /// The access class of a raw path, read before the request is parsed (a function route with a bad function path
    /// is still a function call).
    static func accessClass(rawPath: Substring) -> AccessClass {
        if let route = exactPaths[rawPath] { return route.accessClass }
        return functionPrefixes.contains { rawPath.hasPrefix($0.prefix) } ? .functionCall : .keyed
    }

    /// The routes whose path is fixed.
    private static let exactPaths: [Substring: Route] = [
        "/healthz": .health, "/readyz": .ready, "/metrics": .metrics, "/openapi.yaml": .openAPI,
        "/subscribe": .subscribeMany, "/query": .queryMany, "/stream-tickets": .streamTickets,
        "/client.js": .clientScript,
    ]

    /// The routes whose path ends with a function path.
    private static let functionPrefixes: [(prefix: String, make: @Sendable (UdfPath) -> Route)] = [
        ("/query/", Route.query), ("/mutation/", Route.mutation), ("/action/", Route.action),
        ("/subscribe/", Route.subscribe),
    ]

    /// Routes a raw (not yet decoded) path.
    /// - Throws: 404 when it matches no route, 400 when it names a function route with a bad function path.
    init(rawPath: Substring) throws(GatewayError) {
        if let route = Self.exactPaths[rawPath] {
            self = route
        } else {
            for (prefix, make) in Self.functionPrefixes where rawPath.hasPrefix(prefix) {
                let text = try Self.percentDecodeFunctionPath(rawPath.dropFirst(prefix.count))
                do {
                    self = make(try UdfPath(parsing: text))
                } catch {
                    throw GatewayError.badRequest(
                        "Invalid function path '\(printable(error.path))': \(error.message)", code: .invalidFunctionPath
                    )
                }
                return
            }
            throw GatewayError.routeNotFound(printable(String(rawPath)))
        }
    }

    /// Percent-decodes a function path taken from the URL. An encoded `/` (`%2F`) is refused rather than silently
    /// turned into a module separator.
    static func percentDecodeFunctionPath(_ text: Substring) throws(GatewayError) -> String {
        guard let bytes = PercentDecoding.decode(text.utf8[...], plusIsSpace: false) else {
            throw GatewayError.badRequest(
                "Malformed percent-encoding in the function path", code: .invalidFunctionPath)
        }
        let slash = UInt8(ascii: "/")
        if bytes.count(where: { $0 == slash }) != text.utf8.count(where: { $0 == slash }) {
            throw GatewayError.badRequest(
                "Function path contains an encoded '/' (%2F); write module separators as a plain '/'",
                code: .invalidFunctionPath)
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw GatewayError.badRequest("Function path is not valid UTF-8", code: .invalidFunctionPath)
        }
        return string
    }
}
