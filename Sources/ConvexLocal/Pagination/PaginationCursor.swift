import ConvexValues
import Foundation

/// A position in one ordered query, as an opaque string: the query it belongs to (table, index, order) and the
/// index key of the last document read (`_creationTime`, then `_id`), or the end of the query.
///
/// A cursor works only for the query it came from: another table, index or order makes it an `InvalidCursor`, as in
/// Convex (whose cursors also hold the query's range and filters; the local deployment's filters are closures, so a
/// cursor here is not bound to them).
struct PaginationCursor: Equatable {
    enum Position: Equatable {
        case after(creationTime: Double, id: String)
        case end
    }

    /// The query a cursor belongs to.
    struct Query: Equatable {
        var table: String
        var order: ScanOrder
        /// `by_creation_time` is the one index the local deployment has.
        var index: String { "by_creation_time" }
    }

    var query: Query
    var position: Position

    private static let version = "c1"

    /// The opaque text clients hold.
    var encoded: String {
        var parts = [Self.version, query.table, query.index, query.order == .ascending ? "asc" : "desc"]
        switch position {
        case .after(let creationTime, let id):
            parts += [String(creationTime.bitPattern, radix: 16), id]
        case .end:
            parts.append("end")
        }
        return Data(parts.joined(separator: "|").utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The cursor that `text` encodes, if it is one of `query`'s.
    /// - Throws: ``fromAnotherQuery`` (a `ConvexError` with `{isConvexSystemError: true, paginationError:
    ///   "InvalidCursor"}`) for another query's cursor, ``unparsable`` for text that is no cursor.
    init(decoding text: String, for query: Query) throws(FunctionCallError) {
        guard let bytes = base64URLDecode(text[...]), let plain = String(validating: bytes, as: UTF8.self) else {
            throw Self.unparsable
        }
        let parts = plain.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 5, parts[0] == Self.version else { throw Self.unparsable }
        let order = parts[3] == "asc" ? ScanOrder.ascending : .descending
        guard parts[1] == query.table, parts[2] == query.index, order == query.order else {
            throw Self.fromAnotherQuery
        }
        self.query = query
        if parts.count == 5, parts[4] == "end" {
            position = .end
        } else if parts.count >= 6, let bits = UInt64(parts[4], radix: 16) {
            position = .after(creationTime: Double(bitPattern: bits), id: parts[5...].joined(separator: "|"))
        } else {
            throw Self.unparsable
        }
    }

    init(query: Query, position: Position) {
        self.query = query
        self.position = position
    }

    /// The cursor just after `document` in `query`.
    init(query: Query, after document: Document) {
        self.init(query: query, position: .after(creationTime: document.creationTime, id: document.id))
    }

    /// Whether `document` comes after this position in the query's order.
    func precedes(_ document: Document) -> Bool {
        switch position {
        case .end:
            return false
        case .after(let creationTime, let id):
            let key = (document.creationTime, document.id)
            return query.order == .ascending ? key > (creationTime, id) : key < (creationTime, id)
        }
    }

    /// The `ConvexError` Convex fails a query with when a cursor is another query's: clients start over.
    static let fromAnotherQuery = FunctionCallError(
        kind: .convexError,
        message:
            "InvalidCursor: Tried to run a query starting from a cursor, but it looks like this cursor is from a "
            + "different query.",
        errorData: .object(["isConvexSystemError": .boolean(true), "paginationError": .string("InvalidCursor")]))

    /// What Convex says of text that is no cursor at all (a plain error, without data).
    static let unparsable = FunctionCallError.userError("Failed to parse cursor")
}

extension Dictionary where Key == String, Value == ConvexValue {
    fileprivate var creationTime: Double {
        if case .float64(let t)? = self["_creationTime"] { return t }
        return 0
    }

    fileprivate var id: String {
        if case .string(let id)? = self["_id"] { return id }
        return ""
    }
}
