import ConvexSyncProtocol

/// What a request path names: a row of the route table (``Route/table``, Pipeline/Dispatch.swift), with the function
/// path of a function route. Parsed once per request, from the raw path.
struct Route: Sendable, Equatable {
    /// One route of the gateway: its path, the methods it answers, what the access stage asks of it, whether it reads
    /// the function spec, and the stage that answers it.
    struct Row: Sendable {
        /// A fixed path (`/healthz`), or a prefix followed by a function path (`/query/` + `messages:list`).
        let path: String
        let takesFunction: Bool
        let methods: [String]
        let access: AccessClass
        /// Whether the stage types its inputs by the function spec (Typed/), so the request waits for its first fetch.
        let typed: Bool
        let stage: Stage

        /// Answers a parsed request of the route, or throws the error to answer with.
        typealias Stage = @Sendable (GatewayCore, ParsedRequest, ResponseContext) throws(GatewayError) -> GatewayAnswer

        /// The route's template, used as the metrics label: the path, with `{function}` for the function path.
        var template: String { takesFunction ? path + "{function}" : path }

        /// A route with a fixed path.
        static func exact(
            _ path: String, methods: [String], access: AccessClass, typed: Bool = false, stage: @escaping Stage
        ) -> Row {
            Row(path: path, takesFunction: false, methods: methods, access: access, typed: typed, stage: stage)
        }

        /// A route whose path is `prefix` followed by a function path; its stage gets the function.
        static func function(
            _ prefix: String, methods: [String], access: AccessClass = .functionCall, typed: Bool = true,
            stage:
                @escaping @Sendable (GatewayCore, UdfPath, ParsedRequest, ResponseContext) throws(GatewayError) ->
                GatewayAnswer
        ) -> Row {
            Row(path: prefix, takesFunction: true, methods: methods, access: access, typed: typed) {
                core, request, context throws(GatewayError) in
                // A function route is parsed with its function (``Route/init(rawPath:)``).
                try stage(core, request.route.function!, request, context)
            }
        }
    }

    let row: Row
    /// The function the route calls, for a function route.
    let function: UdfPath?

    static func == (lhs: Route, rhs: Route) -> Bool {
        lhs.row.path == rhs.row.path && lhs.function == rhs.function
    }

    static let queryTemplate = "/query/{function}"

    /// The route's template, used as the metrics label.
    var template: String { row.template }

    /// The methods the route answers.
    var allowedMethods: [String] { row.methods }

    var accessClass: AccessClass { row.access }

    /// Whether the route acts as the caller (so it reads credentials): every route the rate limit counts.
    var actsForCaller: Bool { row.access.isRateLimited }

    /// The event-stream routes, whose paths start with `/subscribe`.
    var isStream: Bool { row.path.hasPrefix("/subscribe") }

    /// Whether a `?ticket=` authenticates the request: the stream routes (an `EventSource` cannot send an
    /// `Authorization` header).
    var takesTicket: Bool { isStream }

    /// The access class of a raw path, read before the request is parsed (a function route with a bad function path
    /// is still a function call).
    static func accessClass(rawPath: Substring) -> AccessClass {
        if let row = exactPaths[rawPath] { return row.access }
        return functionPrefixes.first { rawPath.hasPrefix($0.path) }?.access ?? .keyed
    }

    /// The rows whose path is fixed, by path.
    private static let exactPaths: [Substring: Row] = Dictionary(
        uniqueKeysWithValues: table.filter { !$0.takesFunction }.map { (Substring($0.path), $0) })

    /// The rows whose path ends with a function path.
    private static let functionPrefixes = table.filter(\.takesFunction)

    /// Routes a raw (not yet decoded) path.
    /// - Throws: 404 when it matches no route, 400 when it names a function route with a bad function path.
    init(rawPath: Substring) throws(GatewayError) {
        if let row = Self.exactPaths[rawPath] {
            self.init(row: row, function: nil)
            return
        }
        guard let row = Self.functionPrefixes.first(where: { rawPath.hasPrefix($0.path) }) else {
            throw GatewayError.routeNotFound(printable(String(rawPath)))
        }
        let text = try Self.percentDecodeFunctionPath(rawPath.dropFirst(row.path.count))
        do {
            self.init(row: row, function: try UdfPath(parsing: text))
        } catch {
            throw GatewayError.badRequest(
                "Invalid function path '\(printable(error.path))': \(error.message)", code: .invalidFunctionPath)
        }
    }

    private init(row: Row, function: UdfPath?) {
        self.row = row
        self.function = function
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
