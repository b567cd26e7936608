import ConvexSyncProtocol
import ConvexValues
import Foundation
import Synchronization

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

    /// The message a deployment gives for a function it does not have, with its `[Request ID: …] Server Error` line (16
    /// random hex digits, new for every answer as a deployment's are), so that a refused function cannot be told apart
    /// from an unknown one. The advice a deployment adds after Convex's sentence differs between deployments (Convex
    /// says to run `npx convex dev`, the local deployment to register the function), so the filtered upstream gives the
    /// deployment's own answers without it too (``withoutAdvice(_:)``).
    static func notFoundMessage(_ function: String) -> String {
        let id = String(UInt64.random(in: .min ... .max), radix: 16)
        let requestID = String(repeating: "0", count: 16 - id.count) + id
        return "[Request ID: \(requestID)] Server Error\nCould not find public function for '\(function)'."
    }

    /// A deployment's unknown-function message cut after Convex's sentence, `Could not find public function for
    /// '<function>'.`: its own Request ID kept, the advice after it left out. Any other message is returned as it is.
    /// The function a refused one is asked as: a module no deployment has, so the deployment answers it as any
    /// function it does not have, in its own time and with its own Request ID (``asked(_:in:)`` then names the
    /// function the caller asked for). Random per process, so that no deployment can have it.
    static let standIn = "refused-by-gateway-" + String(UInt64.random(in: .min ... .max), radix: 16) + ":refused"

    /// A deployment's answer for ``standIn`` as the answer for `function`: an unknown function's message without the
    /// deployment's advice, naming `function`; any other failure (the connection lost, a timeout) as it is.
    static func asked(_ function: String, in failure: UpstreamFailure) -> UpstreamFailure {
        guard case .unknownFunction(let message) = failure else { return failure }
        return .unknownFunction(
            message: withoutAdvice(message).replacingOccurrences(of: "'\(standIn)'", with: "'\(function)'"))
    }

    static func withoutAdvice(_ message: String) -> String {
        guard let sentence = message.firstRange(of: "Could not find public function for '"),
            let end = message[sentence.upperBound...].firstRange(of: "'.")
        else { return message }
        return String(message[..<end.upperBound])
    }
}

/// An upstream that answers for refused functions exactly as the deployment answers for unknown ones, and passes
/// everything else through. Filtering at the upstream boundary keeps every other behaviour identical too: argument
/// and format errors still come first, `GET`s, `POST`s and streams fail the same way, at the same point.
struct FilteredUpstream: ConvexUpstream {
    let base: any ConvexUpstream
    let filter: FunctionFilter

    func makeQuerySet() -> any UpstreamQuerySet {
        FilteredQuerySet(base: base.makeQuerySet(), filter: filter)
    }

    func call(_ kind: CallKind, _ function: String, args: ConvexValue, timeout: Duration) async throws(UpstreamFailure)
        -> UpstreamAnswer
    {
        try await filtered(function) { name throws(UpstreamFailure) in
            try await base.call(kind, name, args: args, timeout: timeout)
        }
    }

    func mutation(_ function: String, args: ConvexValue, as request: SessionRequest, timeout: Duration)
        async throws(UpstreamFailure) -> UpstreamAnswer
    {
        try await filtered(function) { name throws(UpstreamFailure) in
            try await base.mutation(name, args: args, as: request, timeout: timeout)
        }
    }

    /// `run(function)`, or for a refused function `run(standIn)` answered as the deployment answers a missing one.
    private func filtered(
        _ function: String, _ run: (String) async throws(UpstreamFailure) -> UpstreamAnswer
    ) async throws(UpstreamFailure) -> UpstreamAnswer {
        guard filter.permits(function) else {
            // Asked of the deployment as a function it does not have: the same round trip, the same Request ID.
            do {
                _ = try await run(FunctionFilter.standIn)
            } catch {
                throw FunctionFilter.asked(function, in: error)
            }
            throw .unknownFunction(message: FunctionFilter.notFoundMessage(function))
        }
        do {
            return try await run(function)
        } catch {
            throw error.inFilterWording
        }
    }

    func waitForView(atLeast ts: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp {
        await base.waitForView(atLeast: ts, timeout: timeout)
    }

    var isConnected: Bool { base.isConnected }
    func waitUntilConnected(timeout: Duration) async throws(UpstreamFailure) {
        try await base.waitUntilConnected(timeout: timeout)
    }
    func close() async { await base.close() }
    var credentialsRefused: Bool { base.credentialsRefused }
    var unreachableCause: String? { base.unreachableCause }
}

/// A query set whose refused members get one failure, as a deployment's unknown functions do, and then nothing; the
/// others are the base set's.
final class FilteredQuerySet: UpstreamQuerySet {
    let transitions: AsyncStream<UpstreamTransition>
    private let continuation: AsyncStream<UpstreamTransition>.Continuation
    private let base: any UpstreamQuerySet
    private let filter: FunctionFilter
    /// The refused members, asked of the deployment as ``FunctionFilter/standIn``, with the function each asked for.
    private let refused = Mutex<[UInt64: String]>([:])

    init(base: any UpstreamQuerySet, filter: FunctionFilter) {
        (transitions, continuation) = AsyncStream.makeStream(of: UpstreamTransition.self)
        self.base = base
        self.filter = filter
        let continuation = self.continuation
        let forward = Task { [weak self] in
            for await transition in base.transitions {
                guard let self else { break }
                self.forward(transition)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in forward.cancel() }
    }

    private func forward(_ transition: UpstreamTransition) {
        var transition = transition
        let refused = self.refused.withLock { $0 }
        for index in transition.changes.indices {
            if case .failure(let failure) = transition.changes[index].result {
                let asked = refused[transition.changes[index].token]
                transition.changes[index].result = .failure(
                    asked.map { FunctionFilter.asked($0, in: failure) } ?? failure.inFilterWording)
            }
        }
        _ = continuation.yield(transition)
    }

    /// A refused function is asked of the deployment as ``FunctionFilter/standIn``, with its arguments: it answers as
    /// for a function it does not have, when it would have answered for that one.
    func add(_ token: UInt64, _ function: String, args: ConvexValue) {
        guard filter.permits(function) else {
            refused.withLock { $0[token] = function }
            base.add(token, FunctionFilter.standIn, args: args)
            return
        }
        base.add(token, function, args: args)
    }

    func remove(_ token: UInt64) {
        refused.withLock { _ = $0.removeValue(forKey: token) }
        base.remove(token)
    }

    func close() {
        base.close()
        continuation.finish()
    }
}

extension UpstreamFailure {
    /// The failure as a filtered upstream answers it: an unknown function in the wording of the filter's refusals
    /// (``FunctionFilter/withoutAdvice(_:)``), anything else as it is.
    fileprivate var inFilterWording: UpstreamFailure {
        guard case .unknownFunction(let message) = self else { return self }
        return .unknownFunction(message: FunctionFilter.withoutAdvice(message))
    }
}
