import ConvexValues

/// Which functions the gateway lets callers reach: when the allowlist is non-empty a function must match one of its
/// patterns, and a function matching a denylist pattern is never reachable (the denylist wins).
public struct FunctionFilter: Sendable, Hashable {
    public var allow: [FunctionPattern]
    public var deny: [FunctionPattern]

    public init(allow: [FunctionPattern] = [], deny: [FunctionPattern] = []) {
        self.allow = allow
        self.deny = deny
    }

    /// Whether every function is reachable.
    public var isOpen: Bool { allow.isEmpty && deny.isEmpty }

    /// Whether `function` (canonical `module:function`) may be called.
    public func permits(_ function: String) -> Bool {
        if !allow.isEmpty && !allow.contains(where: { $0.matches(function) }) { return false }
        return !deny.contains { $0.matches(function) }
    }

    /// The message a Convex deployment gives for a function it does not have, with its `[Request ID: …] Server Error`
    /// line (16 random hex digits), so that a refused function cannot be told apart from an unknown one.
    static func notFoundMessage(_ function: String) -> String {
        let id = String(UInt64.random(in: .min ... .max), radix: 16)
        let requestID = String(repeating: "0", count: 16 - id.count) + id
        return "[Request ID: \(requestID)] Server Error\n"
            + "Could not find public function for '\(function)'. Did you forget to run `npx convex dev` or `npx convex deploy`?"
    }
}

/// An upstream that answers for refused functions exactly as the deployment answers for unknown ones, and passes
/// everything else through. Filtering at the upstream boundary keeps every other behaviour identical too: argument
/// and format errors still come first, `GET`s, `POST`s and streams fail the same way, at the same point.
struct FilteredUpstream: ConvexUpstream {
    let base: any ConvexUpstream
    let filter: FunctionFilter

    func subscribe(_ function: String, args: ConvexValue) -> AsyncStream<UpstreamResult> {
        guard filter.permits(function) else {
            // Like an unknown function's subscription: one failure, then open until the reader leaves.
            let failure = UpstreamResult.failure(.unknownFunction(message: FunctionFilter.notFoundMessage(function)))
            return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { $0.yield(failure) }
        }
        return base.subscribe(function, args: args)
    }

    func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration) async throws(UpstreamFailure)
        -> ConvexValue
    {
        try check(function)
        return try await base.call(kind, function, args: args, timeout: timeout)
    }

    var isConnected: Bool { base.isConnected }
    func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) {
        try await base.waitUntilConnected(timeout: timeout)
    }
    func close() async { await base.close() }

    private func check(_ function: String) throws(UpstreamFailure) {
        guard filter.permits(function) else {
            throw .unknownFunction(message: FunctionFilter.notFoundMessage(function))
        }
    }
}
