import ConvexSyncProtocol
import ConvexValues

/// An application error thrown by a function, carrying data the caller receives as `errorData`
/// (the Python client raises `ConvexError` with `.data`).
public struct ConvexError: Error, Sendable, Hashable, CustomStringConvertible {
    public var data: ConvexValue

    public init(_ data: ConvexValue) {
        self.data = data
    }

    /// The message part: the string itself for string data, otherwise its Convex JSON.
    public var description: String {
        if case .string(let s) = data { return s }
        return data.convexJSONString
    }
}

/// Why a function call failed, before it is rendered for a particular client.
struct FunctionCallError: Error, Sendable {
    enum Kind: Sendable {
        /// An uncaught error from the function (or a database call it made).
        case uncaught
        /// A `ConvexError` with data.
        case convexError
        case argumentValidation
        case returnsValidation
        /// Unknown function, wrong kind, or internal function without admin.
        case notFound
        /// Refused, not run: the caller has too much under way (the message starts with Convex's code).
        case overloaded
    }

    var kind: Kind
    var message: String
    var errorData: ConvexValue?

    static func userError(_ message: String) -> FunctionCallError {
        FunctionCallError(kind: .uncaught, message: message, errorData: nil)
    }

    /// No function at `path` that the caller may call. Convex's sentence, `Could not find public function for
    /// '<path>'.`, which clients recognise, with `advice` for this deployment in place of Convex's (`npx convex dev`
    /// deploys a Convex project's functions; this deployment's are the ones registered with it).
    static func notFound(
        _ path: UdfPath, publicOnly: Bool, advice: String = LocalDeployment.registerAdvice
    ) -> FunctionCallError {
        FunctionCallError(
            kind: .notFound,
            message: "Could not find \(publicOnly ? "public function" : "function") for '\(path.canonical)'. "
                + advice,
            errorData: nil)
    }

    /// An action refused because its socket already runs `limit` actions: Convex's code and sentence.
    static func tooManyInflightActions(limit: Int) -> FunctionCallError {
        FunctionCallError(
            kind: .overloaded,
            message: "TooManyInflightActionsForSingleClient: Inflight actions overloaded for a single client, "
                + "max concurrency: \(limit)",
            errorData: nil)
    }

    static func from(_ error: any Error) -> FunctionCallError {
        switch error {
        case let e as FunctionCallError: return e
        case let e as ConvexError:
            return FunctionCallError(kind: .convexError, message: e.description, errorData: e.data)
        default: return FunctionCallError(kind: .uncaught, message: String(describing: error), errorData: nil)
        }
    }

    /// The error text after the request-id line, as Convex phrases it.
    var detail: String {
        switch kind {
        case .uncaught: "Uncaught Error: \(message)"
        case .convexError: "Uncaught ConvexError: \(message)"
        case .argumentValidation: "ArgumentValidationError: \(message)"
        case .returnsValidation: "ReturnsValidationError: \(message)"
        case .notFound, .overloaded: message
        }
    }

    /// `[Request ID: …] Server Error` followed by the detail: the `errorMessage` clients receive.
    func clientMessage(requestId: String) -> String {
        "[Request ID: \(requestId)] Server Error\n\(detail)"
    }
}

/// A short random request id (16 hex digits), as Convex prints in error messages.
func makeRequestId() -> String {
    var generator = SystemRandomNumberGenerator()
    let n: UInt64 = generator.next()
    let hex = String(n, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}
