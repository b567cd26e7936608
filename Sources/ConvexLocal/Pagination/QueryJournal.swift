import ConvexValues

/// What a query run decided that its next run must decide the same way: for a paginated query, where its page ended.
///
/// Sent to the client with every `QueryUpdated` and `QueryFailed` as an opaque string, and sent back in
/// `ModifyQuerySet`'s `Add` when the client subscribes the query again (after a reconnect), so a page re-run on any
/// socket keeps its end while documents are inserted before it.
struct QueryJournal: Sendable, Hashable {
    var endCursor: String?

    /// The journal's wire text: `{"end_cursor": <cursor or null>}`; a query that did not paginate has none.
    var encoded: String? {
        guard let endCursor else { return nil }
        return ConvexValue.object(["end_cursor": .string(endCursor)]).convexJSONString
    }

    /// The journal a client sent back. Text that is not a journal counts as none: the page re-runs with `numItems`.
    init(decoding text: String?) {
        guard let text, case .object(let fields)? = try? ConvexValue(convexJSON: text),
            case .string(let cursor)? = fields["end_cursor"]
        else { return }
        endCursor = cursor
    }

    init(endCursor: String? = nil) {
        self.endCursor = endCursor
    }
}
