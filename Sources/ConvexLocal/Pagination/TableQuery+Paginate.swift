import ConvexValues

extension TableQuery {
    /// One page of this query, as Convex's `.paginate(paginationOpts)`: `{page, isDone, continueCursor,
    /// splitCursor?, pageStatus?}` (see ``PageReader`` for the rules). Pass the function's `paginationOpts` argument;
    /// a query may paginate once.
    /// - Throws: `InvalidCursor` for a cursor of another query; an error for bad options or a second `paginate`.
    public func paginate(_ paginationOpts: ConvexValue?) throws -> ConvexValue {
        try paginate(PaginationOptions(paginationOpts))
    }

    /// One page of this query; see ``paginate(_:)-(ConvexValue?)``.
    public func paginate(_ options: PaginationOptions) throws -> ConvexValue {
        guard context.nextJournal == nil else {
            throw FunctionCallError.userError(
                "This query or mutation function ran multiple paginated queries. Convex only supports a single "
                    + "paginated query in each function.")
        }
        let reader = PageReader(
            query: .init(table: table, order: scanOrder), options: options, journalEndCursor: context.journal.endCursor)
        let page = try reader.read(context.scan(table, order: scanOrder)) { document in
            predicates.allSatisfy { $0(document) }
        }
        context.nextJournal = QueryJournal(endCursor: page.continueCursor)
        return page.value
    }
}
