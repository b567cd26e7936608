import ConvexValues

/// One page of an ordered query, as `paginate` reads it (Convex's `query_page`): a pure function of the documents in
/// query order, the options and the query's journal, with no store or clock.
///
/// - The end cursor is the options' `endCursor`, else the journal's. With one, the page holds every matching
///   document up to and including it, whatever `numItems` and the row limit say, so a page keeps its boundaries while
///   documents are inserted or deleted inside it. Without one, the page stops after `numItems` matching documents,
///   at the end of the query, or when `maximumRowsRead` (if given) rows have been read (`pageStatus:
///   "SplitRequired"`: the page may be incomplete).
/// - `continueCursor` is where the next page starts: the end cursor when there is one, else the position after the
///   last row read (a filtered-out row counts), or the end of the query once it ran out; `isDone` is whether it is the
///   end of the query. The journal records it, so the next run of the subscription reads to the same place.
/// - `splitCursor` is the position after the middle row read, when more than two rows were read; `pageStatus` is
///   `"SplitRecommended"` when more than 3/4 of the row limit was read or the page holds more than 6,144 items.
struct PageReader {
    /// The rows a query may read (Convex's per-transaction limit); `maximumRowsRead` may only lower it.
    static let rowLimit = 32_000
    /// Convex's largest page.
    static let maximumNumItems = 32_000
    /// Above this many items a page is recommended for a split (3/4 of 8,192).
    static let splitRecommendedItems = 6_144

    var query: PaginationCursor.Query
    var options: PaginationOptions
    /// The end cursor a previous run of the same subscription recorded in its journal.
    var journalEndCursor: String?

    /// The page, and the end cursor to record in the journal.
    struct Page: Equatable {
        var items: [Document]
        var isDone: Bool
        var continueCursor: String
        var splitCursor: String?
        var pageStatus: String?

        /// `{page, isDone, continueCursor, splitCursor, pageStatus}`, as Convex's `PaginationResult` (the last two
        /// `null` when absent, as Convex sends them).
        var value: ConvexValue {
            .object([
                "page": .array(items.map { .object($0) }), "isDone": .boolean(isDone),
                "continueCursor": .string(continueCursor),
                "splitCursor": splitCursor.map { .string($0) } ?? .null,
                "pageStatus": pageStatus.map { .string($0) } ?? .null,
            ])
        }
    }

    /// Reads a page from `documents`, all of the query's documents in its order; `matches` is the query's filter.
    /// - Throws: `InvalidCursor` for a cursor that is not this query's; an error for a page size out of range.
    func read(_ documents: [Document], matches: (Document) -> Bool) throws(FunctionCallError) -> Page {
        guard options.numItems >= 1 else {
            throw .userError("Must request at least 1 document while paginating")
        }
        guard options.numItems <= Self.maximumNumItems else {
            throw .userError("Requested too many documents while paginating (at most \(Self.maximumNumItems))")
        }
        let start = try options.cursor.map { text throws(FunctionCallError) in
            try PaginationCursor(decoding: text, for: query)
        }
        let end = try (options.endCursor ?? journalEndCursor).map { text throws(FunctionCallError) in
            try PaginationCursor(decoding: text, for: query)
        }
        let rowLimit = min(options.maximumRowsRead ?? Self.rowLimit, Self.rowLimit)
        var items: [Document] = []
        var rowsRead: [Document] = []
        var stoppedAtLimit = false
        var exhausted = true
        if start?.position != .end {
            for document in documents where start?.precedes(document) ?? true {
                if let end {
                    if end.precedes(document) {
                        exhausted = false
                        break
                    }
                } else if options.maximumRowsRead != nil, rowsRead.count == rowLimit {
                    stoppedAtLimit = true
                    exhausted = false
                    break
                }
                rowsRead.append(document)
                if matches(document) { items.append(document) }
                // A full page stops without looking further, so it is not done even when nothing follows (Convex).
                if end == nil, items.count == options.numItems {
                    exhausted = false
                    break
                }
            }
        }
        let continueCursor: PaginationCursor
        if let end {
            continueCursor = end
        } else if exhausted {
            continueCursor = PaginationCursor(query: query, position: .end)
        } else {
            // Not exhausted, so a row was read (numItems and the row limit are at least 1).
            continueCursor = PaginationCursor(query: query, after: rowsRead[rowsRead.count - 1])
        }
        var pageStatus: String?
        if stoppedAtLimit {
            pageStatus = "SplitRequired"
        } else if rowsRead.count * 4 > rowLimit * 3 || items.count > Self.splitRecommendedItems {
            pageStatus = "SplitRecommended"
        }
        let splitCursor =
            rowsRead.count > 2 ? PaginationCursor(query: query, after: rowsRead[rowsRead.count / 2]).encoded : nil
        return Page(
            items: items, isDone: continueCursor.position == .end, continueCursor: continueCursor.encoded,
            splitCursor: splitCursor, pageStatus: pageStatus)
    }
}
