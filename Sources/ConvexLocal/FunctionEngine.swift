import ConvexSyncProtocol
import ConvexValues
import Logging
import Synchronization

/// The result of running one function, before it is rendered for a client.
struct FunctionOutcome: Sendable {
    var result: Result<ConvexValue, FunctionCallError>
    var logLines: [String]
    /// Tables a query read (for reactive invalidation).
    var readTables: Set<String> = []
    /// Commit timestamp of a mutation, or the snapshot a query ran at.
    var ts: ConvexTimestamp?
    /// A paginated query's journal (where its page ended), for the client to send back.
    var journal: String?
}

/// Runs registered functions against the store and tells subscribers about commits.
final class FunctionEngine: Sendable {
    let registry: FunctionRegistry
    let store: DocumentStore
    let logger: Logger
    /// Called after every commit with the written tables and the commit timestamp.
    let onCommit: @Sendable (Set<String>, ConvexTimestamp) -> Void

    private struct CacheKey: Hashable {
        var path: String
        var args: [String: ConvexValue]
        var caller: CallerIdentity
        var journal: QueryJournal
    }

    /// Query results at the latest snapshot: queries are deterministic in (snapshot, caller, path, args), so
    /// sockets subscribed to the same query share one evaluation per commit.
    private let queryCache = Mutex<(ts: ConvexTimestamp, entries: [CacheKey: FunctionOutcome])>((.zero, [:]))
    static let maxCachedQueries = 10_000

    /// Function paths parsed before, valid ones only: a subscription's path comes with every evaluation of it, and a
    /// commit re-evaluates every subscription that read what it wrote. At most `maxParsedPaths` (paths come from
    /// clients).
    private let parsedPaths = Mutex<[String: UdfPath]>([:])
    static let maxParsedPaths = 4096

    static let maxArgsSize = 16 << 20
    static let maxResultSize = 16 << 20

    /// What an unknown function's message advises (``LocalDeployment/Configuration/unknownFunctionAdvice``).
    let unknownFunctionAdvice: String

    init(
        registry: FunctionRegistry, store: DocumentStore, logger: Logger,
        unknownFunctionAdvice: String = LocalDeployment.registerAdvice,
        onCommit: @escaping @Sendable (Set<String>, ConvexTimestamp) -> Void
    ) {
        self.unknownFunctionAdvice = unknownFunctionAdvice
        self.registry = registry
        self.store = store
        self.logger = logger
        self.onCommit = onCommit
    }

    /// Finds the function at `path` of the given kind visible to `caller`.
    func resolve(path: String, kind: FunctionKind?, caller: CallerIdentity, fromFunction: Bool)
        -> Result<RegisteredFunction, FunctionCallError>
    {
        let udfPath: UdfPath
        do {
            udfPath = try parse(path)
        } catch {
            return .failure(FunctionCallError(kind: .notFound, message: error.description, errorData: nil))
        }
        let allowInternal = caller.isAdmin || fromFunction
        guard let function = registry.function(at: udfPath), function.visibility == .public || allowInternal else {
            return .failure(.notFound(udfPath, publicOnly: !allowInternal, advice: unknownFunctionAdvice))
        }
        if let kind, function.kind != kind {
            return .failure(
                FunctionCallError(
                    kind: .notFound,
                    message:
                        "Trying to execute \(udfPath.canonical) as \(kind.rawValue), but it is defined as \(function.kind.rawValue).",
                    errorData: nil))
        }
        return .success(function)
    }

    /// `path` parsed (``UdfPath/init(parsing:)``), once while it is remembered.
    private func parse(_ path: String) throws(UdfPathError) -> UdfPath {
        if let parsed = parsedPaths.withLock({ $0[path] }) { return parsed }
        let parsed = try UdfPath(parsing: path)
        parsedPaths.withLock { paths in
            if paths.count >= Self.maxParsedPaths { paths.removeAll(keepingCapacity: true) }
            paths[path] = parsed
        }
        return parsed
    }

    private func validate(_ function: RegisteredFunction, args: [String: ConvexValue], snapshot: StoreSnapshot)
        -> FunctionCallError?
    {
        let size = ConvexValue.object(args).convexSize
        if size > Self.maxArgsSize {
            return FunctionCallError(
                kind: .argumentValidation,
                message:
                    "Arguments for \(function.path.canonical) are too large (actual: \(size) bytes, maximum size: \(Self.maxArgsSize) bytes)",
                errorData: nil)
        }
        if let validators = function.args,
            let failure = Validator.validateArgs(args, against: validators, store: snapshot)
        {
            return FunctionCallError(kind: .argumentValidation, message: failure.message, errorData: nil)
        }
        return nil
    }

    private func checkResult(_ function: RegisteredFunction, _ value: ConvexValue, snapshot: StoreSnapshot?)
        -> FunctionCallError?
    {
        do {
            try value.checkLimits()
        } catch {
            return .userError("Function \(function.path.canonical) returned an invalid value: \(error.description)")
        }
        if value.convexSize > Self.maxResultSize {
            return .userError(
                "Function \(function.path.canonical) return value is too large (\(value.convexSize) bytes > maximum size \(Self.maxResultSize) bytes)"
            )
        }
        if let returns = function.returns, let failure = returns.check(value, path: "", store: snapshot) {
            return FunctionCallError(kind: .returnsValidation, message: failure.message, errorData: nil)
        }
        return nil
    }

    /// Runs a query at `snapshot` (default: the latest).
    func runQuery(
        path: String, args: [String: ConvexValue], caller: CallerIdentity, fromFunction: Bool = false,
        snapshot: StoreSnapshot? = nil, journal: QueryJournal = QueryJournal()
    ) -> FunctionOutcome {
        let snapshot = snapshot ?? store.snapshot
        let function: RegisteredFunction
        switch resolve(path: path, kind: .query, caller: caller, fromFunction: fromFunction) {
        case .success(let f): function = f
        case .failure(let e): return FunctionOutcome(result: .failure(e), logLines: [], ts: snapshot.ts)
        }
        if let e = validate(function, args: args, snapshot: snapshot) {
            return FunctionOutcome(result: .failure(e), logLines: [], ts: snapshot.ts)
        }
        guard case .query(let handler) = function.handler else {
            return FunctionOutcome(result: .failure(.userError("not a query")), logLines: [], ts: snapshot.ts)
        }
        let context = QueryContext(caller: caller, snapshot: snapshot, journal: journal)
        let result: Result<ConvexValue, FunctionCallError>
        do {
            let value = try handler(context, args)
            if let e = checkResult(function, value, snapshot: snapshot) {
                result = .failure(e)
            } else {
                result = .success(value)
            }
        } catch {
            result = .failure(.from(error))
        }
        return FunctionOutcome(
            result: result, logLines: context.logLines, readTables: context.readTables, ts: snapshot.ts,
            journal: context.nextJournal?.encoded)
    }

    /// ``runQuery(path:args:caller:fromFunction:snapshot:)`` through the per-snapshot result cache.
    func runQueryCached(
        path: String, args: [String: ConvexValue], caller: CallerIdentity, snapshot: StoreSnapshot,
        journal: QueryJournal = QueryJournal()
    ) -> FunctionOutcome {
        let key = CacheKey(path: (try? parse(path))?.canonical ?? path, args: args, caller: caller, journal: journal)
        if let hit = queryCache.withLock({ $0.ts == snapshot.ts ? $0.entries[key] : nil }) { return hit }
        let outcome = runQuery(path: path, args: args, caller: caller, snapshot: snapshot, journal: journal)
        queryCache.withLock { cache in
            if cache.ts < snapshot.ts || cache.entries.count >= Self.maxCachedQueries {
                // Keeping the table's size: the next snapshot's queries are mostly the same ones, re-run.
                cache.ts = snapshot.ts
                cache.entries.removeAll(keepingCapacity: true)
            }
            if cache.ts == snapshot.ts { cache.entries[key] = outcome }
        }
        return outcome
    }

    /// Runs a mutation as the only writer and commits it; subscribers are notified before this returns.
    func runMutation(path: String, args: [String: ConvexValue], caller: CallerIdentity, fromFunction: Bool = false)
        -> FunctionOutcome
    {
        let function: RegisteredFunction
        switch resolve(path: path, kind: .mutation, caller: caller, fromFunction: fromFunction) {
        case .success(let f): function = f
        case .failure(let e): return FunctionOutcome(result: .failure(e), logLines: [])
        }
        guard case .mutation(let handler) = function.handler else {
            return FunctionOutcome(result: .failure(.userError("not a mutation")), logLines: [])
        }
        var logLines: [String] = []
        do {
            let (value, ts, _) = try store.write(
                { transaction throws -> ConvexValue in
                    if let e = validate(function, args: args, snapshot: transaction.working) { throw e }
                    let context = MutationContext(caller: caller, transaction: transaction)
                    do {
                        let value = try handler(context, args)
                        logLines = context.logLines
                        if let e = checkResult(function, value, snapshot: context.transaction.working) { throw e }
                        transaction = context.transaction
                        return value
                    } catch {
                        logLines = context.logLines
                        throw error
                    }
                }, onCommit: onCommit)
            return FunctionOutcome(result: .success(value), logLines: logLines, ts: ts)
        } catch {
            return FunctionOutcome(result: .failure(.from(error)), logLines: logLines)
        }
    }

    /// Runs an action.
    func runAction(path: String, args: [String: ConvexValue], caller: CallerIdentity, fromFunction: Bool = false) async
        -> FunctionOutcome
    {
        let function: RegisteredFunction
        switch resolve(path: path, kind: .action, caller: caller, fromFunction: fromFunction) {
        case .success(let f): function = f
        case .failure(let e): return FunctionOutcome(result: .failure(e), logLines: [])
        }
        if let e = validate(function, args: args, snapshot: store.snapshot) {
            return FunctionOutcome(result: .failure(e), logLines: [])
        }
        guard case .action(let handler) = function.handler else {
            return FunctionOutcome(result: .failure(.userError("not an action")), logLines: [])
        }
        let context = ActionContext(caller: caller, engine: self)
        do {
            let value = try await handler(context, args)
            if let e = checkResult(function, value, snapshot: nil) {
                return FunctionOutcome(result: .failure(e), logLines: context.logLines)
            }
            return FunctionOutcome(result: .success(value), logLines: context.logLines)
        } catch {
            return FunctionOutcome(result: .failure(.from(error)), logLines: context.logLines)
        }
    }

    /// Runs any kind of function (for `/api/run` and `/api/function`).
    func run(path: String, args: [String: ConvexValue], caller: CallerIdentity) async -> FunctionOutcome {
        switch resolve(path: path, kind: nil, caller: caller, fromFunction: false) {
        case .failure(let e): return FunctionOutcome(result: .failure(e), logLines: [])
        case .success(let f):
            switch f.kind {
            case .query: return runQuery(path: path, args: args, caller: caller)
            case .mutation: return runMutation(path: path, args: args, caller: caller)
            case .action: return await runAction(path: path, args: args, caller: caller)
            }
        }
    }
}
