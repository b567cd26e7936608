/// A plain function error: thrown by a function it reaches clients as `Uncaught Error: <message>`; thrown by the
/// direct-call methods of ``LocalDeployment`` it carries what a client would see after the request-id line.
public struct FunctionFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A deployment could not start.
public struct LocalDeploymentError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
