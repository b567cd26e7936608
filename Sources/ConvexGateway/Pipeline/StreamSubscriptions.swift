import ConvexSyncProtocol
import ConvexValues

extension GatewayError.Code {
    /// A multi-subscription stream URL names no subscription, too many, or one badly.
    package static let invalidSubscriptions = Self(rawValue: "InvalidSubscriptions")
}

/// The subscriptions a multi-subscription stream URL asks for:
/// `/subscribe?sub.<id>=<module:function>&args.<id>=<URL-encoded JSON object>[&sub.<id2>=…]`, in URL order.
/// `args.<id>` is optional (`{}`); ids are 1–64 of `A–Z a–z 0–9 _ -`. Parsed before the stream starts, so a bad
/// id, function or JSON is a plain HTTP error naming the subscription.
struct StreamSubscriptions: Sendable {
    struct Subscription: Sendable {
        var id: String
        var function: UdfPath
        /// The arguments as sent, typed later by the argument stage (with the function spec).
        var input: ArgumentStage.Input
    }

    var subscriptions: [Subscription]

    /// Query parameters of `/subscribe` that are not subscriptions (`ticket` is taken out by the parse stage).
    static let otherParameters: Set<String> = ["format"]

    /// - Throws: 400 `InvalidSubscriptions` (or the argument stage's own error) naming the subscription.
    init(_ query: QueryString, limit: Int) throws(GatewayError) {
        var functions: [(id: String, text: String)] = []
        var arguments: [String: String] = [:]
        for parameter in query.parameters where !Self.otherParameters.contains(parameter.name) {
            let name = parameter.name
            let kind: Substring
            let id: Substring
            if name.hasPrefix("sub.") {
                (kind, id) = ("sub", name.dropFirst(4))
            } else if name.hasPrefix("args.") {
                (kind, id) = ("args", name.dropFirst(5))
            } else {
                throw Self.invalid(
                    "Unknown query parameter '\(printable(name))' on /subscribe; name subscriptions with "
                        + "sub.<id>=<module:function> and their arguments with args.<id>=<JSON object>")
            }
            guard Self.isValidID(id) else {
                throw Self.invalid(
                    "Subscription id '\(printable(String(id)))' is not valid: use 1 to 64 of A-Z a-z 0-9 _ -")
            }
            let idText = String(id)
            guard let value = parameter.value else {
                throw Self.invalid("Query parameter '\(printable(name))' has no value")
            }
            if kind == "sub" {
                guard !functions.contains(where: { $0.id == idText }) else {
                    throw Self.invalid("Subscription '\(idText)' is given more than once")
                }
                functions.append((idText, value))
            } else {
                guard arguments.updateValue(value, forKey: idText) == nil else {
                    throw Self.invalid("Arguments of subscription '\(idText)' are given more than once")
                }
            }
        }
        guard !functions.isEmpty else {
            throw Self.invalid(
                "Name at least one subscription: /subscribe?sub.<id>=<module:function>&args.<id>=<JSON object>")
        }
        guard functions.count <= limit else {
            throw Self.invalid("\(functions.count) subscriptions on one stream; at most \(limit) are allowed")
        }
        if let orphan = arguments.keys.sorted().first(where: { id in !functions.contains { $0.id == id } }) {
            throw Self.invalid("args.\(orphan) is given without sub.\(orphan)")
        }
        var subscriptions: [Subscription] = []
        for (id, text) in functions {
            let function: UdfPath
            do {
                function = try UdfPath(parsing: text)
            } catch {
                throw GatewayError.badRequest(
                    "Subscription '\(id)': invalid function path '\(printable(error.path))': \(error.message)",
                    code: .invalidFunctionPath)
            }
            var input = ArgumentStage.Input.body(.object([:]))
            if let text = arguments[id] {
                input = try ArgumentStage.input(fromBody: Array(text.utf8), what: "Subscription '\(id)': args.\(id)")
            }
            subscriptions.append(Subscription(id: id, function: function, input: input))
        }
        self.subscriptions = subscriptions
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

    private static func invalid(_ message: String) -> GatewayError {
        .badRequest(message, code: .invalidSubscriptions)
    }
}

extension GatewayError {
    /// The same error, its message saying which subscription of a stream it concerns.
    func naming(subscription id: String) -> GatewayError {
        var error = self
        error.message = "Subscription '\(id)': \(message)"
        return error
    }
}
