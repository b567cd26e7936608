import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import TestSupport
import Testing

@testable import ConvexLocal

/// The rules of `paginate` (``PageReader``), on plain documents: no store, no clock.
@Suite struct PageReaderTests {
    static let query = PaginationCursor.Query(table: "feed", order: .ascending)

    /// Documents `0..<n` in ascending creation order, with `n` as a field.
    static func documents(_ n: Int) -> [Document] {
        (0..<n).map {
            ["_id": .string("id\($0)"), "_creationTime": .float64(Double(1000 + $0)), "n": .float64(Double($0))]
        }
    }

    static func numbers(_ page: PageReader.Page) -> [Int] {
        page.items.compactMap { if case .float64(let n)? = $0["n"] { Int(n) } else { nil } }
    }

    static func read(
        _ documents: [Document], _ options: PaginationOptions, journal: String? = nil,
        query: PaginationCursor.Query = query, matches: (Document) -> Bool = { _ in true }
    ) throws(FunctionCallError) -> PageReader.Page {
        try PageReader(query: query, options: options, journalEndCursor: journal).read(documents, matches: matches)
    }

    @Test func pagesFollowOneAnotherWithoutGapOrOverlapAndTheLastIsDone() throws {
        let docs = Self.documents(7)
        let first = try Self.read(docs, .init(numItems: 3))
        #expect(Self.numbers(first) == [0, 1, 2] && !first.isDone)
        let second = try Self.read(docs, .init(numItems: 3, cursor: first.continueCursor))
        #expect(Self.numbers(second) == [3, 4, 5] && !second.isDone)
        let third = try Self.read(docs, .init(numItems: 3, cursor: second.continueCursor))
        #expect(Self.numbers(third) == [6] && third.isDone)
        // Exactly numItems left: the page does not look further, the next one is empty and done (as Convex).
        let exact = try Self.read(Self.documents(6), .init(numItems: 3, cursor: first.continueCursor))
        #expect(Self.numbers(exact) == [3, 4, 5] && !exact.isDone)
        let empty = try Self.read(Self.documents(6), .init(numItems: 3, cursor: exact.continueCursor))
        #expect(empty.items.isEmpty && empty.isDone)
        // From the end cursor: nothing, done.
        let after = try Self.read(docs, .init(numItems: 3, cursor: third.continueCursor))
        #expect(after.items.isEmpty && after.isDone && after.continueCursor == third.continueCursor)
    }

    @Test func anEndCursorHoldsThePageWhateverNumItemsSaysAndWinsOverTheJournal() throws {
        var docs = Self.documents(6)
        let first = try Self.read(docs, .init(numItems: 3))
        // Documents inserted inside the page (between 1 and 2) stay in it; numItems is ignored.
        docs.insert(["_id": "new", "_creationTime": 1001.5, "n": 100.0], at: 2)
        let pinned = try Self.read(docs, .init(numItems: 3, endCursor: first.continueCursor))
        #expect(Self.numbers(pinned) == [0, 1, 100, 2] && pinned.continueCursor == first.continueCursor)
        // The journal pins it the same way; the options' endCursor wins over it.
        let byJournal = try Self.read(docs, .init(numItems: 1), journal: first.continueCursor)
        #expect(Self.numbers(byJournal) == [0, 1, 100, 2])
        let second = try Self.read(docs, .init(numItems: 1))
        let both = try Self.read(
            docs, .init(numItems: 1, endCursor: second.continueCursor), journal: first.continueCursor)
        #expect(Self.numbers(both) == [0])
        // A deleted boundary document still bounds the page.
        docs.removeAll { $0["n"] == 2.0 }
        let afterDelete = try Self.read(docs, .init(numItems: 3, endCursor: first.continueCursor))
        #expect(Self.numbers(afterDelete) == [0, 1, 100])
        let next = try Self.read(docs, .init(numItems: 3, cursor: first.continueCursor))
        #expect(Self.numbers(next) == [3, 4, 5])
    }

    @Test func theContinueCursorCountsFilteredRowsAndTheSplitCursorIsTheMiddleRowRead() throws {
        let docs = Self.documents(10)
        let evens = try Self.read(docs, .init(numItems: 2)) { $0["n"].map { $0 == 0.0 || $0 == 2.0 } ?? false }
        #expect(Self.numbers(evens) == [0, 2])
        // Rows read: 0, 1, 2; the split is after row 1 (index count / 2).
        let rest = try Self.read(docs, .init(numItems: 10, cursor: evens.continueCursor))
        #expect(Self.numbers(rest).first == 3)
        let split = try #require(evens.splitCursor)
        let firstHalf = try Self.read(docs, .init(numItems: 1, endCursor: split))
        #expect(Self.numbers(firstHalf) == [0, 1])
        // Two rows or fewer: no split cursor; no pageStatus below the thresholds (both null on the wire).
        let small = try Self.read(docs, .init(numItems: 2))
        #expect(small.splitCursor == nil && small.pageStatus == nil)
        guard case .object(let fields) = small.value else { Issue.record("not an object"); return }
        #expect(fields["splitCursor"] == .null && fields["pageStatus"] == .null)
    }

    @Test func aRowLimitEndsThePageWithSplitRequiredButNotAPinnedPage() throws {
        let docs = Self.documents(10)
        let limited = try Self.read(docs, .init(numItems: 8, maximumRowsRead: 4))
        #expect(Self.numbers(limited) == [0, 1, 2, 3] && limited.pageStatus == "SplitRequired" && !limited.isDone)
        // 3 rows of a limit of 4 is 3/4, not more: no recommendation; 4 of 5 is.
        #expect(try Self.read(docs, .init(numItems: 3, maximumRowsRead: 4)).pageStatus == nil)
        #expect(try Self.read(docs, .init(numItems: 4, maximumRowsRead: 5)).pageStatus == "SplitRecommended")
        let end = try Self.read(docs, .init(numItems: 9)).continueCursor
        let pinned = try Self.read(docs, .init(numItems: 1, endCursor: end, maximumRowsRead: 2))
        #expect(Self.numbers(pinned).count == 9 && pinned.pageStatus != "SplitRequired")
    }

    @Test func cursorsOfAnotherQueryAndTextThatIsNoCursorAreRefused() throws {
        let docs = Self.documents(4)
        let cursor = try Self.read(docs, .init(numItems: 2)).continueCursor
        let descending = PaginationCursor.Query(table: "feed", order: .descending)
        let other = #expect(throws: FunctionCallError.self) {
            try Self.read(docs, .init(numItems: 2, cursor: cursor), query: descending)
        }
        #expect(other?.errorData == ["isConvexSystemError": true, "paginationError": "InvalidCursor"])
        #expect(other?.detail.hasPrefix("Uncaught ConvexError: InvalidCursor: ") == true)
        // In an end cursor or a journal too.
        #expect(throws: FunctionCallError.self) {
            try Self.read(docs, .init(numItems: 2), journal: cursor, query: .init(table: "posts", order: .ascending))
        }
        let garbage = #expect(throws: FunctionCallError.self) { try Self.read(docs, .init(numItems: 2, cursor: "%%")) }
        #expect(garbage?.detail == "Uncaught Error: Failed to parse cursor" && garbage?.errorData == nil)
        #expect(throws: FunctionCallError.self) { try Self.read(docs, .init(numItems: 0)) }
    }
}
