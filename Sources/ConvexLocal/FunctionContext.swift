import ConvexValues
import Synchronization

/// What every function can do: read the caller's identity and write log lines.
public class FunctionContext {
    /// The caller's user identity (`ctx.auth.getUserIdentity()`), `nil` when unauthenticated.
    public let identity: UserIdentity?
    /// Whether the caller used the admin key.
    public let isAdmin: Bool
    private(set) var logLines: [String] = []

    init(caller: CallerIdentity) {
        self.identity = caller.user
        self.isAdmin = caller.isAdmin
    }

    /// Adds a `[LOG] 'message'` line to the function's log lines.
    public func log(_ message: String) { logLines.append(formatLogLine("LOG", message)) }
    /// Adds a `[INFO] 'message'` line.
    public func info(_ message: String) { logLines.append(formatLogLine("INFO", message)) }
    /// Adds a `[WARN] 'message'` line.
    public func warn(_ message: String) { logLines.append(formatLogLine("WARN", message)) }
    /// Adds an `[ERROR] 'message'` line.
    public func error(_ message: String) { logLines.append(formatLogLine("ERROR", message)) }
}

func formatLogLine(_ level: String, _ message: String) -> String {
    "[\(level)] '\(message)'"
}

/// The context of a query: deterministic reads of one snapshot of the store. The tables it reads are recorded,
/// so a subscription is re-evaluated only when one of them is written.
public class QueryContext: FunctionContext {
    var snapshot: StoreSnapshot
    private(set) var readTables: Set<String> = []
    /// The journal of the subscription's previous run (where its page ended), if any.
    let journal: QueryJournal
    /// The journal of this run: set by `paginate`, which a query may call once.
    var nextJournal: QueryJournal?

    init(caller: CallerIdentity, snapshot: StoreSnapshot, journal: QueryJournal = QueryJournal()) {
        self.snapshot = snapshot
        self.journal = journal
        super.init(caller: caller)
    }

    /// The document with this id, or `nil`.
    public func get(_ id: String) -> Document? {
        if let table = snapshot.table(ofId: id) { readTables.insert(table) }
        return snapshot.get(id)
    }

    /// A scan of `table` in `_creationTime` order; refine with `filter`, `order`, then `collect`, `take`, `first`.
    public func query(_ table: String) -> TableQuery {
        TableQuery(context: self, table: table)
    }

    func scan(_ table: String, order: ScanOrder) -> [Document] {
        readTables.insert(table)
        return snapshot.scan(table, order: order)
    }
}

/// A table scan being built: `ctx.query("messages").filter { $0["channel"] == "a" }.order(.descending).take(10)`.
public struct TableQuery {
    let context: QueryContext
    let table: String
    var predicates: [(Document) -> Bool] = []
    var scanOrder: ScanOrder = .ascending

    /// Keeps only the documents for which `predicate` is true.
    public func filter(_ predicate: @escaping (Document) -> Bool) -> TableQuery {
        var q = self
        q.predicates.append(predicate)
        return q
    }

    /// Keeps documents whose `field` equals `value`.
    public func filter(_ field: String, equals value: ConvexValue) -> TableQuery {
        filter { $0[field] == value }
    }

    /// Sets the `_creationTime` order (ascending by default).
    public func order(_ order: ScanOrder) -> TableQuery {
        var q = self
        q.scanOrder = order
        return q
    }

    /// All matching documents.
    public func collect() -> [Document] {
        context.scan(table, order: scanOrder).filter { doc in predicates.allSatisfy { $0(doc) } }
    }

    /// The first `n` matching documents.
    public func take(_ n: Int) -> [Document] {
        var out: [Document] = []
        guard n > 0 else { return out }
        for doc in context.scan(table, order: scanOrder) where predicates.allSatisfy({ $0(doc) }) {
            out.append(doc)
            if out.count == n { break }
        }
        return out
    }

    /// The first matching document, or `nil`.
    public func first() -> Document? { take(1).first }

    /// The only matching document, `nil` if none.
    /// - Throws: when more than one document matches.
    public func unique() throws -> Document? {
        let docs = take(2)
        if docs.count > 1 { throw FunctionCallError.userError("unique() query returned more than one result") }
        return docs.first
    }
}

/// The context of a mutation: reads see the mutation's own writes; all writes commit together at the end, or
/// none when the mutation throws.
public final class MutationContext: QueryContext {
    var transaction: Transaction

    init(caller: CallerIdentity, transaction: Transaction) {
        self.transaction = transaction
        super.init(caller: caller, snapshot: transaction.working)
    }

    /// Inserts a document and returns its new `_id`.
    @discardableResult
    public func insert(_ table: String, _ fields: [String: ConvexValue]) throws -> String {
        defer { snapshot = transaction.working }
        return try transaction.insert(table, fields)
    }

    /// Sets the given fields (a shallow merge) and removes the fields named in `removing`.
    public func patch(_ id: String, _ fields: [String: ConvexValue], removing: [String] = []) throws {
        defer { snapshot = transaction.working }
        try transaction.patch(id, fields, removing: removing)
    }

    /// Replaces all user fields of a document.
    public func replace(_ id: String, _ fields: [String: ConvexValue]) throws {
        defer { snapshot = transaction.working }
        try transaction.replace(id, fields)
    }

    /// Deletes a document.
    public func delete(_ id: String) throws {
        defer { snapshot = transaction.working }
        try transaction.delete(id)
    }
}

/// The context of an action: may call queries, mutations and other actions, and log.
public final class ActionContext: Sendable {
    public let identity: UserIdentity?
    public let isAdmin: Bool
    let caller: CallerIdentity
    let engine: FunctionEngine
    private let lines = Mutex<[String]>([])

    init(caller: CallerIdentity, engine: FunctionEngine) {
        self.caller = caller
        self.identity = caller.user
        self.isAdmin = caller.isAdmin
        self.engine = engine
    }

    var logLines: [String] { lines.withLock { $0 } }

    public func log(_ message: String) { lines.withLock { $0.append(formatLogLine("LOG", message)) } }
    public func error(_ message: String) { lines.withLock { $0.append(formatLogLine("ERROR", message)) } }

    /// Runs a query (public or internal) as the same caller and returns its value.
    /// - Throws: the query's error (`ConvexError` keeps its data).
    public func runQuery(_ path: String, _ args: [String: ConvexValue] = [:]) async throws -> ConvexValue {
        let outcome = engine.runQuery(path: path, args: args, caller: caller, fromFunction: true)
        lines.withLock { $0.append(contentsOf: outcome.logLines) }
        return try outcome.result.get()
    }

    /// Runs a mutation (public or internal) as the same caller and returns its value after it committed.
    public func runMutation(_ path: String, _ args: [String: ConvexValue] = [:]) async throws -> ConvexValue {
        let outcome = engine.runMutation(path: path, args: args, caller: caller, fromFunction: true)
        lines.withLock { $0.append(contentsOf: outcome.logLines) }
        return try outcome.result.get()
    }

    /// Runs another action (public or internal) as the same caller.
    public func runAction(_ path: String, _ args: [String: ConvexValue] = [:]) async throws -> ConvexValue {
        let outcome = await engine.runAction(path: path, args: args, caller: caller, fromFunction: true)
        lines.withLock { $0.append(contentsOf: outcome.logLines) }
        return try outcome.result.get()
    }
}
