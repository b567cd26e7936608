import ConvexValues

/// Why a call, or one update of a subscription, failed.
///
/// Switch on ``code`` to tell the cases apart; ``message`` is for people. Function failures keep the
/// deployment's own message and log lines; a `ConvexError` thrown by a function also carries its ``data``.
///
/// | Code | Meaning | Typical HTTP mapping |
/// | --- | --- | --- |
/// | ``Code/convexError`` | the function threw `ConvexError(data)` | 4xx with `data` |
/// | ``Code/functionFailed`` | the function failed otherwise (server error) | 500 |
/// | ``Code/unknownFunction`` | no public function of that name | 404 |
/// | ``Code/invalidArguments`` | the arguments did not match the function's validator, or could not be encoded | 400 |
/// | ``Code/connectionLost`` | the socket dropped while an action was running (actions are not retried) | 502 |
/// | ``Code/unreachable`` | no connection to the deployment could be made before the call timed out | 503 |
/// | ``Code/timeout`` | connected, but no answer before the call timed out | 504 |
/// | ``Code/authenticationFailed`` | the deployment rejected the credentials | 401 |
/// | ``Code/decodingFailed`` | the result did not decode into the requested Swift type | 500 |
/// | ``Code/cancelled`` | the calling task was cancelled | — |
/// | ``Code/clientClosed`` | the client was closed | — |
public struct ConvexClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure: stable for programs.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Hashable, Sendable {
            case convexError = "ConvexError"
            case functionFailed = "FunctionFailed"
            case unknownFunction = "UnknownFunction"
            case invalidArguments = "InvalidArguments"
            case connectionLost = "ConnectionLost"
            case unreachable = "Unreachable"
            case timeout = "Timeout"
            case authenticationFailed = "AuthenticationFailed"
            case decodingFailed = "DecodingFailed"
            case cancelled = "Cancelled"
            case clientClosed = "ClientClosed"
            case invalidURL = "InvalidURL"
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }

        /// The function threw a `ConvexError`; its payload is in ``ConvexClientError/data``.
        public static let convexError = Code(.convexError)
        /// The function failed with a server error; the deployment's message is in ``ConvexClientError/message``.
        public static let functionFailed = Code(.functionFailed)
        /// The deployment has no public function of that name.
        public static let unknownFunction = Code(.unknownFunction)
        /// The arguments were rejected by the function's validator, or could not be encoded as Convex values.
        public static let invalidArguments = Code(.invalidArguments)
        /// The connection dropped while an action was in flight; the action may or may not have run.
        public static let connectionLost = Code(.connectionLost)
        /// The call timed out while no connection to the deployment could be established.
        public static let unreachable = Code(.unreachable)
        /// The call timed out while connected.
        public static let timeout = Code(.timeout)
        /// The deployment rejected the authentication token or admin key.
        public static let authenticationFailed = Code(.authenticationFailed)
        /// The function's result did not decode into the requested type.
        public static let decodingFailed = Code(.decodingFailed)
        /// The calling task was cancelled before the call finished.
        public static let cancelled = Code(.cancelled)
        /// The client was closed.
        public static let clientClosed = Code(.clientClosed)
        /// The deployment URL is not an `http`, `https`, `ws` or `wss` URL with a host.
        public static let invalidURL = Code(.invalidURL)

        /// The code's stable name, e.g. `ConvexError`, `UnknownFunction`.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    public let code: Code
    /// Human-readable explanation. For function failures this is the deployment's message.
    public let message: String
    /// The payload of a `ConvexError` (only for ``Code/convexError``).
    public let data: ConvexValue?
    /// The function's log lines, when the deployment sent any.
    public let logLines: [String]
    /// The function the call named, when the error is about one call.
    public let functionPath: String?

    public init(
        _ code: Code, message: String, data: ConvexValue? = nil, logLines: [String] = [], functionPath: String? = nil
    ) {
        self.code = code
        self.message = message
        self.data = data
        self.logLines = logLines
        self.functionPath = functionPath
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let functionPath { text += " (function \(functionPath))" }
        if let data { text += " data: \(data.convexJSONString)" }
        return text
    }

    func withFunctionPath(_ path: String) -> ConvexClientError {
        ConvexClientError(code, message: message, data: data, logLines: logLines, functionPath: path)
    }
}

extension ConvexClientError {
    /// Classifies a failure the deployment reported for a function (QueryFailed, or a failed
    /// MutationResponse/ActionResponse).
    ///
    /// The sync protocol carries only a message, so unknown functions and validator failures are recognised by
    /// the deployment's message texts (`Could not find public function for '…'`, `Trying to execute … but it is
    /// defined as …`, `ArgumentValidationError: …`), after the `[Request ID: …] Server Error` line if present.
    static func functionFailure(
        message: String, errorData: ConvexValue?, logLines: [String], functionPath: String
    ) -> ConvexClientError {
        if let errorData {
            return ConvexClientError(
                .convexError, message: message, data: errorData, logLines: logLines,
                functionPath: functionPath)
        }
        // Deployments prefix the detail with a `[Request ID: …] Server Error` line.
        var detail = Substring(message)
        if detail.hasPrefix("[Request ID:"), let newline = detail.firstIndex(of: "\n") {
            detail = detail[detail.index(after: newline)...]
        }
        let code: Code
        if detail.hasPrefix("Could not find public function") || detail.hasPrefix("Could not find function")
            || (detail.hasPrefix("Trying to execute") && detail.contains("but it is defined as"))
        {
            code = .unknownFunction
        } else if detail.hasPrefix("ArgumentValidationError") {
            code = .invalidArguments
        } else {
            code = .functionFailed
        }
        return ConvexClientError(code, message: message, logLines: logLines, functionPath: functionPath)
    }
}
