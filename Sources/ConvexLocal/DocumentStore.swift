import ConvexSyncProtocol
import ConvexValues
import Foundation
import Synchronization

/// A stored document: its fields including the system fields `_id` (string) and `_creationTime` (float64 ms).
public typealias Document = [String: ConvexValue]

/// The in-memory document store of a local deployment.
///
/// Readers take an immutable ``StoreSnapshot`` (copy-on-write tables), so a query sees one consistent state.
/// Writers are serialized: one transaction at a time builds on the latest snapshot and commits with a commit
/// timestamp from the wall clock in nanoseconds that never goes back (always after the previous commit and the
/// store's creation), so a restarted deployment is ahead of the `maxObservedTimestamp` its clients report.
final class DocumentStore: Sendable {
    private struct State {
        var snapshot: StoreSnapshot
    }

    private let state: Mutex<State>
    /// Serializes writers (one mutation at a time); held while the mutation function runs.
    private let writer = Mutex<Void>(())

    init() {
        state = Mutex(
            State(
                snapshot: StoreSnapshot(
                    tables: [:], idTables: [:], ts: ConvexTimestamp(nanoseconds: wallClockNanoseconds()),
                    lastCreationTime: 0)))
    }

    /// The latest committed state.
    var snapshot: StoreSnapshot { state.withLock { $0.snapshot } }

    /// The latest timestamp: the last commit, or now if the clock has moved past it.
    var latestTimestamp: ConvexTimestamp {
        let committed = snapshot.ts
        return max(committed, ConvexTimestamp(nanoseconds: wallClockNanoseconds()))
    }

    /// Runs `body` as the only writer on a transaction over the latest snapshot and commits it if it returns
    /// without throwing and wrote something.
    /// - Returns: the body's result, the commit timestamp (the snapshot's when nothing was written) and the written tables.
    ///   `onCommit` runs inside the commit, before any reader can see the new state, so every subscriber has been
    ///   told about a write before a snapshot containing it exists.
    func write<R>(
        _ body: (inout Transaction) throws -> R,
        onCommit: (Set<String>, ConvexTimestamp) -> Void = { _, _ in }
    ) throws -> (result: R, ts: ConvexTimestamp, writtenTables: Set<String>) {
        try writer.withLock { _ in
            var transaction = Transaction(base: snapshot)
            let result = try body(&transaction)
            if transaction.writtenTables.isEmpty {
                return (result, transaction.base.ts, [])
            }
            let committed = state.withLock { state -> ConvexTimestamp in
                let ts = ConvexTimestamp(nanoseconds: max(wallClockNanoseconds(), state.snapshot.ts.nanoseconds + 1))
                var next = transaction.working
                next.ts = ts
                onCommit(transaction.writtenTables, ts)
                state.snapshot = next
                return ts
            }
            return (result, committed, transaction.writtenTables)
        }
    }
}

func wallClockNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// One table: documents by id plus their order by `_creationTime` (insertion order).
struct Table: Sendable {
    var documents: [String: Document] = [:]
    var order: [String] = []
}

/// An immutable view of the store at one timestamp.
public struct StoreSnapshot: Sendable {
    var tables: [String: Table]
    /// Which table each id ever issued belongs to.
    var idTables: [String: String]
    /// Commit timestamp of this state.
    public internal(set) var ts: ConvexTimestamp
    var lastCreationTime: Double

    func table(ofId id: String) -> String? { idTables[id] }

    func get(_ id: String) -> Document? {
        guard let table = idTables[id] else { return nil }
        return tables[table]?.documents[id]
    }

    func scan(_ table: String, order: ScanOrder) -> [Document] {
        guard let t = tables[table] else { return [] }
        let ids = order == .ascending ? t.order : t.order.reversed()
        return ids.compactMap { t.documents[$0] }
    }
}

/// Scan order by `_creationTime`.
public enum ScanOrder: Sendable {
    case ascending
    case descending
}

/// A write transaction on top of a snapshot.
struct Transaction {
    let base: StoreSnapshot
    var working: StoreSnapshot
    var writtenTables: Set<String> = []

    init(base: StoreSnapshot) {
        self.base = base
        self.working = base
    }

    mutating func insert(_ table: String, _ fields: [String: ConvexValue]) throws(FunctionCallError) -> String {
        try Self.checkTableName(table)
        try Self.checkUserFields(fields)
        var id: String
        repeat { id = makeDocumentId() } while working.idTables[id] != nil
        let now = Double(wallClockNanoseconds()) / 1_000_000
        let creationTime = now > working.lastCreationTime ? now : working.lastCreationTime.nextUp
        working.lastCreationTime = creationTime
        var document = fields
        document["_id"] = .string(id)
        document["_creationTime"] = .float64(creationTime)
        try Self.checkDocumentSize(document)
        working.idTables[id] = table
        working.tables[table, default: Table()].documents[id] = document
        working.tables[table, default: Table()].order.append(id)
        writtenTables.insert(table)
        return id
    }

    mutating func patch(_ id: String, _ fields: [String: ConvexValue], removing: [String]) throws(FunctionCallError) {
        guard let table = working.idTables[id], var document = working.tables[table]?.documents[id] else {
            throw FunctionCallError.userError("Update on nonexistent document ID \(id)")
        }
        for (key, value) in fields {
            if key == "_id" || key == "_creationTime" {
                if value == document[key] { continue }
                throw FunctionCallError.userError("Cannot modify system field `\(key)`")
            }
            document[key] = value
        }
        for key in removing {
            if key.hasPrefix("_") { throw FunctionCallError.userError("Cannot remove system field `\(key)`") }
            document.removeValue(forKey: key)
        }
        try Self.checkUserFields(document.filter { $0.key != "_id" && $0.key != "_creationTime" })
        try Self.checkDocumentSize(document)
        working.tables[table]?.documents[id] = document
        writtenTables.insert(table)
    }

    mutating func replace(_ id: String, _ fields: [String: ConvexValue]) throws(FunctionCallError) {
        guard let table = working.idTables[id], let old = working.tables[table]?.documents[id] else {
            throw FunctionCallError.userError("Replace on nonexistent document ID \(id)")
        }
        var user = fields
        for system in ["_id", "_creationTime"] {
            if let v = user.removeValue(forKey: system), v != old[system] {
                throw FunctionCallError.userError("Cannot modify system field `\(system)`")
            }
        }
        try Self.checkUserFields(user)
        var document = user
        document["_id"] = old["_id"]
        document["_creationTime"] = old["_creationTime"]
        try Self.checkDocumentSize(document)
        working.tables[table]?.documents[id] = document
        writtenTables.insert(table)
    }

    mutating func delete(_ id: String) throws(FunctionCallError) {
        guard let table = working.idTables[id], working.tables[table]?.documents[id] != nil else {
            throw FunctionCallError.userError("Delete on nonexistent document ID \(id)")
        }
        working.tables[table]?.documents.removeValue(forKey: id)
        working.tables[table]?.order.removeAll { $0 == id }
        writtenTables.insert(table)
    }

    static func checkTableName(_ table: String) throws(FunctionCallError) {
        guard isIdentifier(table) else {
            throw FunctionCallError.userError(
                "Invalid table name: \"\(table)\" (table names start with a letter and contain only letters, digits and underscores, at most 64 characters)"
            )
        }
    }

    static func checkUserFields(_ fields: [String: ConvexValue]) throws(FunctionCallError) {
        for key in fields.keys {
            if key.isEmpty { throw FunctionCallError.userError("Empty field names are not allowed in documents") }
            if key.hasPrefix("_") {
                throw FunctionCallError.userError("Field name \(key) starts with '_', which is reserved")
            }
        }
        do {
            try ConvexValue.object(fields).checkLimits()
        } catch {
            throw FunctionCallError.userError("Invalid document: \(error.description)")
        }
    }

    static func checkDocumentSize(_ document: Document) throws(FunctionCallError) {
        let value = ConvexValue.object(document)
        if value.convexSize > 1 << 20 {
            throw FunctionCallError.userError(
                "Document is too large (\(value.convexSize) bytes > maximum size 1048576 bytes)")
        }
        if value.nestingDepth > 16 {
            throw FunctionCallError.userError(
                "Document is too nested (nested \(value.nestingDepth) levels deep > maximum 16)")
        }
    }
}

/// Identifier rule of Convex table names: a letter or `_` first, then letters, digits, `_`; not all underscores; ≤ 64.
func isIdentifier(_ s: String) -> Bool {
    let bytes = Array(s.utf8)
    guard let first = bytes.first, bytes.count <= 64 else { return false }
    let isLetter = { (b: UInt8) in (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }
    guard isLetter(first) || first == 0x5F else { return false }
    guard bytes.allSatisfy({ isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }) else { return false }
    return !bytes.allSatisfy { $0 == 0x5F }
}

private let idAlphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)

/// A fresh document id: 32 characters of lowercase base32, like Convex's.
func makeDocumentId() -> String {
    var generator = SystemRandomNumberGenerator()
    var out = [UInt8]()
    out.reserveCapacity(32)
    for _ in 0..<32 { out.append(idAlphabet[Int(generator.next() % 32)]) }
    return String(decoding: out, as: UTF8.self)
}
