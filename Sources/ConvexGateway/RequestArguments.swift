import ConvexValues

/// Turns what an HTTP client sent into the arguments object of a Convex call.
///
/// - Body: a JSON object (an empty body means `{}`), read with Convex's semantics: numbers are float64, while
///   `{"$integer": …}`, `{"$float": …}` and `{"$bytes": …}` wrappers are honoured.
/// - Query string: either `args=<URL-encoded JSON object>`, or one `key=value` parameter per argument, where a value
///   that parses as JSON is that JSON value (`n=5` is the number 5, `ok=true` a boolean, `tags=["a"]` an array) and
///   any other value is a string (`name=Bob`). To force a string, quote it as JSON: `code="007"`.
///   `format` is reserved for the output mode.
public enum RequestArguments {
    /// Query parameters that are never function arguments.
    public static let reservedParameters: Set<String> = ["args", "format"]

    public static func fromBody(_ body: [UInt8]) throws(GatewayError) -> ConvexValue {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return .object([:])
        }
        let value: ConvexValue
        do {
            value = try ConvexValue(plainJSON: body)
        } catch {
            throw GatewayError.malformedJSON(error, in: "Request body")
        }
        return try requireObject(value, what: "Request body")
    }

    public static func fromQuery(_ items: [(name: String, value: String?)]) throws(GatewayError) -> ConvexValue {
        var fields: [String: ConvexValue] = [:]
        var argsJSON: String?
        for (name, value) in items {
            if name == "format" { continue }
            guard let value else {
                throw GatewayError.badRequest(
                    "Query parameter '\(printable(name))' has no value; write \(printable(name))=<value>",
                    code: .invalidArguments)
            }
            if name == "args" {
                guard argsJSON == nil else {
                    throw GatewayError.badRequest("Query parameter 'args' is given more than once", code: .invalidArguments)
                }
                argsJSON = value
                continue
            }
            guard !name.isEmpty else {
                throw GatewayError.badRequest("Query string has a parameter with an empty name", code: .invalidArguments)
            }
            guard fields[name] == nil else {
                throw GatewayError.badRequest(
                    "Query parameter '\(printable(name))' is given more than once", code: .invalidArguments)
            }
            fields[name] = coerce(value)
        }
        if let argsJSON {
            guard fields.isEmpty else {
                throw GatewayError.badRequest(
                    "Use either args=<JSON object> or key=value parameters, not both", code: .invalidArguments)
            }
            let value: ConvexValue
            do {
                value = try ConvexValue(plainJSON: Array(argsJSON.utf8))
            } catch {
                throw GatewayError.malformedJSON(error, in: "Query parameter 'args'")
            }
            return try requireObject(value, what: "Query parameter 'args'")
        }
        return try requireObject(.object(fields), what: "Query parameters")
    }

    /// A parameter value that parses as JSON is that value; anything else is the text itself.
    static func coerce(_ text: String) -> ConvexValue {
        if let value = try? ConvexValue(plainJSON: Array(text.utf8)) {
            return value
        }
        return .string(text)
    }

    private static func requireObject(_ value: ConvexValue, what: String) throws(GatewayError) -> ConvexValue {
        guard case .object = value else {
            throw GatewayError.badRequest(
                "\(what) must be a JSON object of named arguments, not \(article(value.typeName)) \(value.typeName)",
                code: .invalidArguments)
        }
        do {
            try value.checkLimits()
        } catch {
            throw GatewayError.badRequest("\(what): \(error.message) (at \(error.path))", code: .invalidArguments)
        }
        return value
    }

    private static func article(_ word: String) -> String {
        word.first.map { "aeiou".contains($0) } == true ? "an" : "a"
    }
}
