import ConvexSyncProtocol
import ConvexValues
import Foundation
import HTTPFields

/// The typed-arguments stage: turns what the client sent into the arguments object of a Convex call, consulting
/// the deployment's function spec when the gateway has one.
///
/// - Body: a JSON object (an empty body means `{}`), read with Convex's semantics: numbers are float64, while
///   `{"$integer": …}`, `{"$float": …}` and `{"$bytes": …}` wrappers are honoured.
/// - Query string: either `args=<URL-encoded JSON object>`, or one `key=value` parameter per argument. A value stays
///   text until this stage looks up the argument's validator: `v.string()` and `v.id()` get the text as sent
///   (`zip=02139` is the string "02139"), `v.int64()` a decimal text exactly, `v.bytes()` base64 text; numbers,
///   booleans, null, arrays and objects are parsed as JSON. Only where no validator is known is the value guessed:
///   text that parses as JSON is that JSON value (`n=5` is the number 5), anything else is a string.
///   `format` is reserved for the output mode; on the stream routes `ticket` never arrives here (the parse stage,
///   Pipeline/ParsedRequest.swift, takes it out of the query string and reads it as the caller's credentials with
///   Access/CallerCredentials.swift).
///
/// Then ``ArgumentCoercion`` turns plain JSON into the int64 and bytes values the validators ask for.
enum ArgumentStage {
    /// What the client sent, before any validator is consulted (the spec may be refreshed and the stage run again).
    enum Input: Sendable {
        case query(QueryString)
        /// The arguments, and the JSON they were read from when the client sent them as a body.
        case body(ConvexValue, sent: [UInt8]? = nil)
    }

    /// The arguments of a call of `function`, typed by `spec` when it knows the function.
    static func arguments(_ input: Input, for function: UdfPath, spec: FunctionSpec?) throws(GatewayError)
        -> ConvexValue
    {
        let known = spec?.publicFunction(function)
        let untyped: ConvexValue
        switch input {
        case .body(let value, _): untyped = value
        case .query(let query): untyped = try fromQuery(query, validator: known?.args)
        }
        guard let known else { return untyped }
        do {
            return try ArgumentCoercion.coerce(arguments: untyped, validator: known.args)
        } catch {
            // A number beyond 2^53 was read as the nearest float64: the refusal quotes what the client wrote.
            if let number = error.number, case .body(_, let sent?) = input,
                let text = SentNumber.text(readAs: number, in: sent)
            {
                throw ArgumentCoercionError(path: error.path, message: ArgumentCoercion.beyondSafeIntegers(text))
                    .gatewayError
            }
            throw error.gatewayError
        }
    }

    /// Reads a request body as JSON, after the size and content-type checks: JSON, a missing type, `text/plain`, or
    /// curl's default form type (`curl -d '{…}'`) are read as JSON; any other declared type is refused with 415. (A
    /// body the auth cookie authenticates is JSON already: the access stage's ``CrossSiteCheck`` refuses the rest.)
    static func input(fromBody body: [UInt8], contentType: String?, maxBytes: Int) throws(GatewayError) -> Input {
        if body.count > maxBytes {
            throw GatewayError.payloadTooLarge(limit: maxBytes)
        }
        if let contentType {
            let mediaType =
                contentType.split(separator: ";", maxSplits: 1).first.map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                } ?? ""
            let accepted =
                mediaType == "application/json" || mediaType.hasSuffix("+json") || mediaType == "text/plain"
                || mediaType == "application/x-www-form-urlencoded" || mediaType.isEmpty
            guard accepted else { throw GatewayError.unsupportedMediaType(printable(contentType)) }
        }
        return try input(fromBody: body)
    }

    /// Reads a request body (or another JSON object the client sent, named by `what` in errors) as JSON.
    static func input(fromBody body: [UInt8], what: String = "Request body") throws(GatewayError) -> Input {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return .body(.object([:]))
        }
        let value: ConvexValue
        do {
            value = try ConvexValue(plainJSON: body)
        } catch {
            throw GatewayError.malformedJSON(error, in: what)
        }
        return .body(try requireObject(value, what: what), sent: body)
    }

    /// The arguments object of a query string; `validator` is the function's arguments validator, if known.
    static func fromQuery(_ query: QueryString, validator: Validator? = nil) throws(GatewayError) -> ConvexValue {
        let fieldValidators: [String: Validator]? =
            if case .object(let fields)? = validator { fields.mapValues(\.unwrappingOptional) } else { nil }
        var fields: [String: ConvexValue] = [:]
        var argsJSON: String?
        for parameter in query.parameters {
            let name = parameter.name
            if name == "format" { continue }
            guard let text = parameter.value else {
                throw GatewayError.badRequest(
                    "Query parameter '\(printable(name))' has no value; write \(printable(name))=<value>",
                    code: .invalidArguments)
            }
            if name == "args" {
                guard argsJSON == nil else {
                    throw GatewayError.badRequest(
                        "Query parameter 'args' is given more than once", code: .invalidArguments)
                }
                argsJSON = text
                continue
            }
            guard !name.isEmpty else {
                throw GatewayError.badRequest(
                    "Query string has a parameter with an empty name", code: .invalidArguments)
            }
            guard fields[name] == nil else {
                throw GatewayError.badRequest(
                    "Query parameter '\(printable(name))' is given more than once", code: .invalidArguments)
            }
            fields[name] = value(ofText: text, for: fieldValidators?[name])
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

    /// One parameter's text as the value its validator asks for; guessed as JSON when no validator is known.
    static func value(ofText text: String, for validator: Validator?) -> ConvexValue {
        guard let validator else { return guessed(text) }
        if takesText(validator) { return .string(text) }
        switch validator {
        case .int64 where ArgumentCoercion.isDecimalInteger(text):
            // Exact: ArgumentCoercion reads the decimal text as an int64, or says it is out of int64's range.
            return .string(text)
        case .any:
            return guessed(text)
        default:
            // Numbers, booleans, null, arrays, objects: JSON text. Anything else stays text for the validator to
            // refuse with its own message.
            return (try? ConvexValue(plainJSON: Array(text.utf8))) ?? .string(text)
        }
    }

    /// Whether the validator wants the text itself: strings, ids, bytes (base64 text), a string literal, or a union
    /// with such a member.
    private static func takesText(_ validator: Validator) -> Bool {
        switch validator {
        case .string, .id, .bytes: true
        case .literal(.string): true
        case .union(let members): members.contains(where: takesText)
        default: false
        }
    }

    /// Text that parses as JSON is that value; any other text is a string.
    static func guessed(_ text: String) -> ConvexValue {
        (try? ConvexValue(plainJSON: Array(text.utf8))) ?? .string(text)
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

/// The typed-arguments stage as the route stages use it: a request body's input, and arguments typed by the current
/// function spec (Typed/).
struct TypedArguments: Sendable {
    let functionSpecs: FunctionSpecStore?
    /// The function allowlist and denylist: a refused function's arguments are never typed, so that it fails exactly
    /// as an unknown one (which the spec does not know either), with the unknown-function 404 and not a 400 naming
    /// an argument its validators refused.
    let functions: FunctionFilter
    let maxBodyBytes: Int

    /// The input of a request's body.
    func bodyInput(_ request: ParsedRequest) throws(GatewayError) -> ArgumentStage.Input {
        try ArgumentStage.input(
            fromBody: request.request.body, contentType: request.request.header(HeaderName.contentType),
            maxBytes: maxBodyBytes)
    }

    /// The arguments of `input` for `function`, typed by the current function spec unless the function is refused.
    func arguments(_ input: ArgumentStage.Input, for function: UdfPath) throws(GatewayError) -> ConvexValue {
        let spec = functions.permits(function.canonical) ? functionSpecs?.current : nil
        return try ArgumentStage.arguments(input, for: function, spec: spec)
    }
}
