/// An error starting an ``HTTPServer`` or preparing a response.
public struct HTTPServerError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case invalidConfiguration
        case startFailed
        case alreadyStarted
        case invalidResponse
    }

    private let code: Code
    /// What went wrong, including libmicrohttpd's last log line when there was one.
    public let message: String

    private init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "HTTPServerError(\(code)): \(message)" }

    /// A configuration value is out of range or unparsable (e.g. a host that is not a numeric address).
    public static func invalidConfiguration(_ message: String) -> Self {
        Self(code: .invalidConfiguration, message: message)
    }

    /// libmicrohttpd refused to start (e.g. the port is in use).
    public static func startFailed(_ message: String) -> Self {
        Self(code: .startFailed, message: message)
    }

    /// ``HTTPServer/start()`` was called on a server that was already started (or stopped).
    public static func alreadyStarted(_ message: String) -> Self {
        Self(code: .alreadyStarted, message: message)
    }

    /// A prepared response has an invalid status or a header libmicrohttpd refuses.
    public static func invalidResponse(_ message: String) -> Self {
        Self(code: .invalidResponse, message: message)
    }

    /// Whether two errors have the same kind (ignoring the message).
    public func hasSameKind(as other: Self) -> Bool { code == other.code }
}
