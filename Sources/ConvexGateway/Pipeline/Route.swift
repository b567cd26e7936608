import ConvexSyncProtocol

/// What a request path names: a row of the route table (``Route/table``, Pipeline/Dispatch.swift), with the function
/// path of a function route. Parsed once per request, from the raw path.
struct Route: Sendable, Equatable {
    /// One route of the gateway: its path, what it serves, the methods it answers, what the access stage asks of it,
    /// whether it reads the function spec, and the stage that answers it.
    struct Row: Sendable {
        /// A fixed path (`/healthz`), or a prefix followed by a function path (`/query/` + `messages:list`).
        let path: String
        let kind: Kind
        let methods: [String]
        let access: AccessClass
        /// Whether the stage types its inputs by the function spec (Typed/), so the request waits for its first fetch.
        let typed: Bool
        let stage: Stage

        /// What a route serves: the later stages and the server ask this of a route, never its path.
        enum Kind: Sendable, Equatable {
            /// The gateway's own routes: probes, metrics, the contract, the browser client, stream tickets.
            case system
            /// Reads query values, also when posted: at shutdown such a request is refused at once, never left to
            /// end as an unknown outcome.
            case read
            /// Calls a function that may write: mutations and actions.
            case call
            /// An event stream, which may authenticate with a `?ticket=` and ask for patches (`delta=`).
            case stream
        }

        /// How the row's stage is called: with the request alone, or also with the function its path names.
        enum Stage: Sendable {
            case fixed(FixedStage)
            case function(FunctionStage)
        }

        /// Answers a parsed request of a fixed route, or throws the error to answer with.
        typealias FixedStage =
            @Sendable (GatewayCore, ParsedRequest, ResponseContext) throws(GatewayError) -> GatewayAnswer
        /// Answers a parsed request of a function route, given the function its path names.
        typealias FunctionStage =
            @Sendable (GatewayCore, UdfPath, ParsedRequest, ResponseContext) throws(GatewayError) -> GatewayAnswer

        /// Whether the path is followed by a function path.
        var takesFunction: Bool {
            if case .function = stage { return true }
            return false
        }

        /// The route's template, used as the metrics label: the path, with `{function}` for the function path.
        var template: String { takesFunction ? path + "{function}" : path }

        /// A route with a fixed path.
        static func exact(
            _ path: String, _ kind: Kind, methods: [String], access: AccessClass, typed: Bool = false,
            stage: @escaping FixedStage
        ) -> Row {
            Row(path: path, kind: kind, methods: methods, access: access, typed: typed, stage: .fixed(stage))
        }

        /// A route whose path is `prefix` followed by a function path; its stage gets the function.
        static func function(
            _ prefix: String, _ kind: Kind, methods: [String], access: AccessClass = .functionCall,
            typed: Bool = true, stage: @escaping FunctionStage
        ) -> Row {
            Row(path: prefix, kind: kind, methods: methods, access: access, typed: typed, stage: .function(stage))
        }
    }

    let row: Row
    /// The row's stage, with the function that the path names for a function route.
    private let stage: Answering

    /// A row's stage as a request calls it: a function route's stage holds the function its path names.
    private enum Answering: Sendable {
        case fixed(Row.FixedStage)
        case function(Row.FunctionStage, UdfPath)
    }

    /// The function the route calls, for a function route.
    var function: UdfPath? {
        if case .function(_, let function) = stage { return function }
        return nil
    }

    /// The row's stage answers the request (or throws the error to answer with).
    func answer(
        _ core: GatewayCore, _ request: ParsedRequest, _ context: ResponseContext
    ) throws(GatewayError) -> GatewayAnswer {
        switch stage {
        case .fixed(let stage): try stage(core, request, context)
        case .function(let stage, let function): try stage(core, function, request, context)
        }
    }

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

    /// What the route serves.
    var kind: Row.Kind { row.kind }

    /// The event-stream routes.
    var isStream: Bool { row.kind == .stream }

    /// Whether a `?ticket=` authenticates the request: the stream routes (an `EventSource` cannot send an
    /// `Authorization` header).
    var takesTicket: Bool { isStream }

    /// The access class of a raw path, read before the request is parsed (a function route with a bad function path
    /// is still a function call).
    static func accessClass(rawPath: Substring) -> AccessClass {
        row(path: rawPath)?.access ?? .keyed
    }

    /// What a path's route serves, if it names one; `path` may be raw or decoded (the table's paths have nothing to
    /// decode).
    static func kind(path: Substring) -> Row.Kind? {
        row(path: path)?.kind
    }

    /// The row a path names, its function path (if any) not yet read.
    private static func row(path: Substring) -> Row? {
        exactPaths[path] ?? functionPrefixes.first { path.hasPrefix($0.path) }
    }

    /// The rows whose path is fixed, by path.
    private static let exactPaths: [Substring: Row] = Dictionary(
        uniqueKeysWithValues: table.filter { !$0.takesFunction }.map { (Substring($0.path), $0) })

    /// The rows whose path ends with a function path.
    private static let functionPrefixes = table.filter(\.takesFunction)

    /// Routes a raw (not yet decoded) path.
    /// - Throws: 404 when it matches no route, 400 when it names a function route with a bad function path.
    init(rawPath: Substring) throws(GatewayError) {
        guard let row = Self.row(path: rawPath) else {
            throw GatewayError.routeNotFound(printable(String(rawPath)))
        }
        let functionStage: Row.FunctionStage
        switch row.stage {
        case .fixed(let stage):
            self.init(row: row, stage: .fixed(stage))
            return
        case .function(let stage): functionStage = stage
        }
        let text = try Self.percentDecodeFunctionPath(rawPath.dropFirst(row.path.count))
        do {
            self.init(row: row, stage: .function(functionStage, try UdfPath(parsing: text)))
        } catch {
            throw GatewayError.badRequest(
                "Invalid function path '\(printable(error.path))': \(error.message)", code: .invalidFunctionPath)
        }
    }

    private init(row: Row, stage: Answering) {
        self.row = row
        self.stage = stage
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
