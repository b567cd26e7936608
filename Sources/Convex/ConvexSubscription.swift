import ConvexValues
import Synchronization

/// A live query: an `AsyncSequence` of the function's result each time it changes.
///
/// Creating the value does nothing; each iteration (each `makeAsyncIterator()`) is one subscriber. Iterations of
/// identical `(function, arguments)` pairs share one upstream query, and the upstream query is removed when its
/// last iteration ends (by `break`, by throwing, by cancellation of the iterating task, or by dropping the
/// iterator). The first element is the current result; later elements arrive as the result changes. A slow
/// consumer gets the newest result, never a backlog.
///
/// Iterating the subscription itself yields values and **throws** the first failure (a `ConvexError`, a server
/// error, a result that does not decode), which ends that iteration, like a failed publisher. To keep watching
/// through failures, iterate ``results`` instead: its elements are `Result`s and a later success follows a
/// failure as soon as the query recovers.
///
/// ```swift
/// for try await team in client.subscribe(to: "mlb:first_place_team", with: ["division": "AL Central"],
///                                        yielding: BaseballTeam.self) {
///     print(team.name, team.wins)
/// }
/// ```
public struct ConvexSubscription<Value: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Value
    public typealias Failure = ConvexClientError

    let core: ClientCore
    /// The function path as given.
    public let functionPath: String
    /// The arguments, as sent.
    public let arguments: [String: ConvexValue]
    let decode: @Sendable (ConvexValue) throws(ConvexClientError) -> Value
    /// Set when the arguments could not be encoded: every iteration fails with it at once.
    let argumentError: ConvexClientError?

    init(
        core: ClientCore, functionPath: String, arguments: [String: ConvexValue],
        argumentError: ConvexClientError? = nil,
        decode: @escaping @Sendable (ConvexValue) throws(ConvexClientError) -> Value
    ) {
        self.core = core
        self.functionPath = functionPath
        self.arguments = arguments
        self.argumentError = argumentError
        self.decode = decode
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(registration: register(), decode: decode)
    }

    /// One subscriber's registration: each iterator, of values or of results, makes its own.
    private func register() -> Registration {
        Registration(core: core, functionPath: functionPath, arguments: arguments, argumentError: argumentError)
    }

    /// Iterates values; throws the first failure, which ends the iteration and the subscriber.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let registration: Registration
        let decode: @Sendable (ConvexValue) throws(ConvexClientError) -> Value

        public mutating func next() async throws(ConvexClientError) -> Value? {
            try await Self.step(registration, decode)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ConvexClientError) -> Value? {
            try await Self.step(registration, decode)
        }

        private static func step(
            _ registration: Registration, _ decode: @Sendable (ConvexValue) throws(ConvexClientError) -> Value
        ) async throws(ConvexClientError) -> Value? {
            guard let result = await registration.next() else {
                registration.end()
                return nil
            }
            do {
                return try decode(try result.get())
            } catch {
                registration.end()
                throw error
            }
        }
    }

    /// The same subscription as a sequence of `Result`s that survives failures: a failed query yields
    /// `.failure` and the iteration goes on; the next good result yields `.success`. Ends only when the
    /// iterating task is cancelled or the client is closed.
    public var results: Results { Results(subscription: self) }

    public struct Results: AsyncSequence, Sendable {
        public typealias Element = Result<Value, ConvexClientError>
        public typealias Failure = Never

        let subscription: ConvexSubscription

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(registration: subscription.register(), decode: subscription.decode)
        }

        public struct AsyncIterator: AsyncIteratorProtocol {
            let registration: Registration
            let decode: @Sendable (ConvexValue) throws(ConvexClientError) -> Value

            public mutating func next() async -> Result<Value, ConvexClientError>? {
                await Self.step(registration, decode)
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async -> Result<Value, ConvexClientError>?
            {
                await Self.step(registration, decode)
            }

            private static func step(
                _ registration: Registration, _ decode: @Sendable (ConvexValue) throws(ConvexClientError) -> Value
            ) async -> Result<Value, ConvexClientError>? {
                guard let result = await registration.next() else {
                    registration.end()
                    return nil
                }
                switch result {
                case .success(let value):
                    do {
                        return .success(try decode(value))
                    } catch {
                        return .failure(error)
                    }
                case .failure(let error):
                    return .failure(error)
                }
            }
        }
    }
}

/// One subscriber's registration with the client; unsubscribes when ended or released.
final class Registration: Sendable {
    private let core: ClientCore
    private let mailbox = ResultMailbox()
    /// `nil` when the arguments were unusable and nothing was subscribed.
    private let id: SubscriberID?
    private let ended = Mutex(false)

    init(core: ClientCore, functionPath: String, arguments: [String: ConvexValue], argumentError: ConvexClientError?) {
        self.core = core
        if let argumentError {
            self.id = nil
            mailbox.deliver(.failure(argumentError))
            mailbox.finish()
        } else {
            self.id = core.addSubscriber(udfPath: functionPath, args: arguments, mailbox: mailbox)
        }
    }

    func next() async -> QueryResult? {
        if ended.withLock({ $0 }) { return nil }
        return await mailbox.next()
    }

    func end() {
        let first = ended.withLock { ended in
            defer { ended = true }
            return !ended
        }
        if first {
            mailbox.finish()
            if let id { core.removeSubscriber(id) }
        }
    }

    deinit {
        end()
    }
}
