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

    /// Routes a raw (not yet decoded) path.
    /// - Throws: 404 when it matches no route, 400 when it names a function route with a bad function path.
    init(rawPath: Substring) throws(GatewayError) {
        switch rawPath {
        case "/healthz": self = .health
        case "/readyz": self = .ready
        case "/metrics": self = .metrics
        case "/openapi.yaml": self = .openAPI
        case "/subscribe": self = .subscribeMany
        case "/query": self = .queryMany
        case "/stream-tickets": self = .streamTickets
        case "/client.js": self = .clientScript
        default:
            for (prefix, make) in [
                ("/query/", Route.query), ("/mutation/", Route.mutation), ("/action/", Route.action),
                ("/subscribe/", Route.subscribe),
            ] as [(String, (UdfPath) -> Route)] where rawPath.hasPrefix(prefix) {
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

    /// The metrics label of a raw path: its route's template, or `unmatched`.
    static func template(rawPath: Substring) -> String {
        (try? Route(rawPath: rawPath))?.template ?? "unmatched"
    }

    /// Percent-decodes a function path taken from the URL. An encoded `/` (`%2F`) is refused rather than silently
    /// turned into a module separator.
    static func percentDecodeFunctionPath(_ text: Substring) throws(GatewayError) -> String {
        var bytes: [UInt8] = []
        var it = text.utf8[...]
        while let b = it.popFirst() {
            guard b == UInt8(ascii: "%") else {
                bytes.append(b)
                continue
            }
            guard let h = it.popFirst(), let l = it.popFirst(), let hi = hexDigitValue(h), let lo = hexDigitValue(l)
            else {
                throw GatewayError.badRequest(
                    "Malformed percent-encoding in the function path", code: .invalidFunctionPath)
            }
            let decoded = hi << 4 | lo
            if decoded == UInt8(ascii: "/") {
                throw GatewayError.badRequest(
                    "Function path contains an encoded '/' (%2F); write module separators as a plain '/'",
                    code: .invalidFunctionPath)
            }
            bytes.append(decoded)
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw GatewayError.badRequest("Function path is not valid UTF-8", code: .invalidFunctionPath)
        }
        return string
    }
}
