import ConvexSyncProtocol
import ConvexValues

/// The subscriptions a multi-subscription stream URL asks for:
/// `/subscribe?sub.<id>=<module:function>&args.<id>=<URL-encoded JSON object>[&sub.<id2>=…]`, in URL order, or the
/// queries of a batch query URL, `/query?q.<id>=…&args.<id>=…` by the same rules.
/// `args.<id>` is optional (`{}`); ids are 1–64 of `A–Z a–z 0–9 _ -`. Parsed before the stream starts, so a bad
/// id, function or JSON is a plain HTTP error naming the subscription.
struct StreamSubscriptions: Sendable {
    /// Which URL: a stream's subscriptions or a batch's queries.
    enum Kind: Sendable {
        case stream, batch

        /// The route's path, as the error messages name it.
        var route: String { self == .stream ? "/subscribe" : "/query" }
        var functionPrefix: String { self == .stream ? "sub" : "q" }
        var noun: String { self == .stream ? "subscription" : "query" }
        var pluralNoun: String { self == .stream ? "subscriptions" : "queries" }
        var capitalNoun: String { self == .stream ? "Subscription" : "Query" }
        var code: GatewayError.Code { self == .stream ? .invalidSubscriptions : .invalidQueries }

        /// The kind of a multi-subscription stream or batch route: the fixed routes (no function in the path) that
        /// stream or read, which name their functions in the query string.
        init?(_ route: Route) {
            guard !route.row.takesFunction else { return nil }
            switch route.kind {
            case .stream: self = .stream
            case .read: self = .batch
            case .system, .call: return nil
            }
        }

        /// `error` naming the subscription (or query) `id` in its message and in its `sub` (`query`) field.
        func naming(_ error: GatewayError, id: String) -> GatewayError {
            self == .stream ? error.naming(subscription: id) : error.naming(query: id)
        }

        /// `error` naming the subscription (or query) that the query parameter `name` belongs to (`sub.<id>`,
        /// `q.<id>`, `args.<id>`), if it belongs to one.
        func naming(_ error: GatewayError, parameter name: String) -> GatewayError {
            for prefix in [functionPrefix + ".", "args."] where name.hasPrefix(prefix) {
                let id = name.dropFirst(prefix.count)
                if StreamSubscriptions.isValidID(id) { return naming(error, id: String(id)) }
            }
            return error
        }
    }

    struct Subscription: Sendable {
        var id: String
        var function: UdfPath
        /// The arguments as sent, typed later by the argument stage (with the function spec).
        var input: ArgumentStage.Input
    }

    var subscriptions: [Subscription]
    let kind: Kind

    /// Query parameters of `/subscribe` that are not subscriptions (`ticket` is taken out by the parse stage).
    static let otherParameters: Set<String> = ["format"]

    /// - Throws: 400 `InvalidSubscriptions` (`InvalidQueries` for a batch; or the argument stage's own error). An
    ///   error about one subscription (its function path, its arguments, a part given twice or without a value) names
    ///   it in its message and in its `sub` field (`query` for a batch), so a client can drop it and keep the others.
    init(_ query: QueryString, limit: Int, kind: Kind = .stream) throws(GatewayError) {
        let (functions, arguments) = try Self.parts(of: query, kind: kind)
        let invalid = { (message: String) in GatewayError.badRequest(message, code: kind.code) }
        let prefix = kind.functionPrefix + "."
        guard !functions.isEmpty else {
            throw invalid(
                "Name at least one \(kind.noun): \(kind.route)?\(prefix)<id>=<module:function>&args.<id>=<JSON object>")
        }
        guard functions.count <= limit else {
            throw invalid(
                kind == .stream
                    ? "\(functions.count) subscriptions on one stream; at most \(limit) are allowed"
                    : "\(functions.count) queries in one request; at most \(limit) are allowed")
        }
        if let orphan = arguments.keys.sorted().first(where: { id in !functions.contains { $0.id == id } }) {
            throw kind.naming(invalid("args.\(orphan) is given without \(prefix)\(orphan)"), id: orphan)
        }
        var subscriptions: [Subscription] = []
        for (id, text) in functions {
            subscriptions.append(try Self.subscription(id: id, function: text, args: arguments[id], kind: kind))
        }
        self.subscriptions = subscriptions
        self.kind = kind
    }

    /// The query string's `sub.<id>` (`q.<id>`) functions, in URL order, and `args.<id>` texts by id.
    /// - Throws: for an unknown parameter, a bad id, a part without a value or given twice.
    private static func parts(
        of query: QueryString, kind: Kind
    ) throws(GatewayError) -> (functions: [(id: String, text: String)], arguments: [String: String]) {
        let prefix = kind.functionPrefix + "."
        let invalid = { (message: String) in GatewayError.badRequest(message, code: kind.code) }
        var functions: [(id: String, text: String)] = []
        var arguments: [String: String] = [:]
        for parameter in query.parameters where !Self.otherParameters.contains(parameter.name) {
            let name = parameter.name
            let isFunction = name.hasPrefix(prefix)
            guard isFunction || name.hasPrefix("args.") else {
                throw invalid(
                    "Unknown query parameter '\(printable(name))' on \(kind.route); name \(kind.pluralNoun) "
                        + "with \(prefix)<id>=<module:function> and their arguments with args.<id>=<JSON object>")
            }
            let id = name.dropFirst(isFunction ? prefix.count : 5)
            guard Self.isValidID(id) else {
                throw invalid(
                    "\(kind.capitalNoun) id '\(printable(String(id)))' is not valid: use 1 to 64 of A-Z a-z 0-9 _ -")
            }
            let idText = String(id)
            guard let value = parameter.value else {
                throw kind.naming(invalid("Query parameter '\(name)' has no value"), id: idText)
            }
            let isNew =
                isFunction
                ? !functions.contains(where: { $0.id == idText }) : arguments[idText] == nil
            guard isNew else { throw kind.naming(invalid("\(name) is given more than once"), id: idText) }
            if isFunction {
                functions.append((idText, value))
            } else {
                arguments[idText] = value
            }
        }
        return (functions, arguments)
    }

    /// One subscription (or query) from its function path and its arguments' JSON text (`{}` when not given).
    /// - Throws: a bad function path or JSON, naming the subscription.
    private static func subscription(
        id: String, function text: String, args: String?, kind: Kind
    ) throws(GatewayError) -> Subscription {
        let function: UdfPath
        do {
            function = try UdfPath(parsing: text)
        } catch {
            throw kind.naming(
                GatewayError.badRequest(
                    "invalid function path '\(printable(error.path))': \(error.message)", code: .invalidFunctionPath),
                id: id)
        }
        var input = ArgumentStage.Input.body(.object([:]))
        if let args {
            do {
                input = try ArgumentStage.input(fromBody: Array(args.utf8), what: "args.\(id)")
            } catch {
                throw kind.naming(error, id: id)
            }
        }
        return Subscription(id: id, function: function, input: input)
    }

    /// Every subscription (or query) with its arguments typed by `arguments` (with the function spec), in URL order.
    /// - Throws: the argument stage's error, naming the subscription (or query) in its message and its field.
    func typed(by arguments: TypedArguments) throws(GatewayError) -> [StreamSubscription] {
        var typed: [StreamSubscription] = []
        typed.reserveCapacity(subscriptions.count)
        for subscription in subscriptions {
            do {
                typed.append(
                    StreamSubscription(
                        id: subscription.id, function: subscription.function,
                        args: try arguments.arguments(subscription.input, for: subscription.function)))
            } catch {
                throw kind.naming(error, id: subscription.id)
            }
        }
        return typed
    }

    static func isValidID(_ id: Substring) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }

}

extension GatewayError {
    /// The same error, its message and its `sub` field saying which subscription of a stream it concerns.
    func naming(subscription id: String) -> GatewayError {
        var error = self
        error.message = "Subscription '\(id)': \(message)"
        error.concerns = ("sub", id)
        return error
    }

    /// The same error, its message and its `query` field saying which query of a batch it concerns.
    func naming(query id: String) -> GatewayError {
        var error = self
        error.message = "Query '\(id)': \(message)"
        error.concerns = ("query", id)
        return error
    }
}
