import ConvexValues

// Typed results (`Decodable`, with `@ConvexInt`/`@ConvexFloat` fields) and typed arguments (`Encodable` structs),
// through ConvexValues' `ConvexDecoder`/`ConvexEncoder`. The `ConvexValue` forms in `ConvexClient.swift` are what
// these reduce to; without type context a call returns `ConvexValue`.

extension ConvexClient {
    /// A live query whose results decode as `T` (inferred from context when `yielding` is omitted).
    ///
    /// A result that does not decode is a ``ConvexClientError/Code/decodingFailed`` failure of that element.
    public func subscribe<T: Decodable & Sendable>(
        to name: String, with args: [String: ConvexValue] = [:], yielding: T.Type = T.self
    ) -> ConvexSubscription<T> {
        ConvexSubscription(core: core, functionPath: name, arguments: args, decode: Self.decoder(T.self, name))
    }

    /// A live query with arguments encoded from an `Encodable` value (a struct, or a `[String: T]`).
    ///
    /// Arguments that do not encode to a Convex object make every iteration fail at once with
    /// ``ConvexClientError/Code/invalidArguments``.
    public func subscribe<Args: Encodable, T: Decodable & Sendable>(
        to name: String, with args: Args, yielding: T.Type = T.self
    ) -> ConvexSubscription<T> {
        do throws(ConvexClientError) {
            return ConvexSubscription(
                core: core, functionPath: name, arguments: try Self.encodeArguments(args, name),
                decode: Self.decoder(T.self, name))
        } catch {
            return ConvexSubscription(
                core: core, functionPath: name, arguments: [:], argumentError: error, decode: Self.decoder(T.self, name)
            )
        }
    }

    /// The current result of query `name`, decoded as `T`.
    public func query<T: Decodable & Sendable>(
        _ name: String, with args: [String: ConvexValue] = [:], yielding: T.Type = T.self
    ) async throws(ConvexClientError) -> T {
        try Self.decoder(T.self, name)(try await query(name, with: args))
    }

    /// The current result of query `name` with `Encodable` arguments, decoded as `T`.
    public func query<Args: Encodable, T: Decodable & Sendable>(
        _ name: String, with args: Args, yielding: T.Type = T.self
    ) async throws(ConvexClientError) -> T {
        try await query(name, with: try Self.encodeArguments(args, name), yielding: T.self)
    }

    /// Runs mutation `name`; its result decoded as `T`. See ``mutation(_:with:)-([String:ConvexValue])``.
    public func mutation<T: Decodable & Sendable>(
        _ name: String, with args: [String: ConvexValue] = [:], yielding: T.Type = T.self
    ) async throws(ConvexClientError) -> T {
        try Self.decoder(T.self, name)(try await mutation(name, with: args))
    }

    /// Runs mutation `name` with `Encodable` arguments; discard the result for the `Void` form.
    @discardableResult
    public func mutation<Args: Encodable>(_ name: String, with args: Args) async throws(ConvexClientError)
        -> ConvexValue
    {
        try await mutation(name, with: try Self.encodeArguments(args, name))
    }

    /// Runs mutation `name` with `Encodable` arguments; its result decoded as `T`.
    public func mutation<Args: Encodable, T: Decodable & Sendable>(
        _ name: String, with args: Args, yielding: T.Type = T.self
    ) async throws(ConvexClientError) -> T {
        try await mutation(name, with: try Self.encodeArguments(args, name), yielding: T.self)
    }

    /// Runs action `name`; its result decoded as `T`.
    public func action<T: Decodable & Sendable>(
        _ name: String, with args: [String: ConvexValue] = [:], yielding: T.Type = T.self
    ) async throws(ConvexClientError) -> T {
        try Self.decoder(T.self, name)(try await action(name, with: args))
    }

    /// Runs action `name` with `Encodable` arguments; discard the result for the `Void` form.
    @discardableResult
    public func action<Args: Encodable>(_ name: String, with args: Args) async throws(ConvexClientError)
        -> ConvexValue
    {
        try await action(name, with: try Self.encodeArguments(args, name))
    }

    /// Runs action `name` with `Encodable` arguments; its result decoded as `T`.
    public func action<Args: Encodable, T: Decodable & Sendable>(
        _ name: String, with args: Args, yielding: T.Type = T.self
    ) async throws(ConvexClientError) -> T {
        try await action(name, with: try Self.encodeArguments(args, name), yielding: T.self)
    }

    // MARK: Coding

    static func decoder<T: Decodable & Sendable>(_ type: T.Type, _ functionPath: String)
        -> @Sendable (ConvexValue) throws(ConvexClientError) -> T
    {
        { value throws(ConvexClientError) in
            do {
                return try ConvexDecoder().decode(T.self, from: value)
            } catch {
                throw ConvexClientError(
                    .decodingFailed, message: "The result does not decode as \(T.self): \(error)",
                    functionPath: functionPath)
            }
        }
    }

    static func encodeArguments<Args: Encodable>(_ args: Args, _ functionPath: String) throws(ConvexClientError)
        -> [String: ConvexValue]
    {
        let value: ConvexValue
        do {
            value = try ConvexEncoder().encodeToValue(args)
        } catch {
            throw ConvexClientError(
                .invalidArguments, message: "The arguments do not encode as Convex values: \(error)",
                functionPath: functionPath)
        }
        guard case .object(let fields) = value else {
            throw ConvexClientError(
                .invalidArguments, message: "The arguments must encode to an object, not \(value.typeName)",
                functionPath: functionPath)
        }
        return fields
    }
}
