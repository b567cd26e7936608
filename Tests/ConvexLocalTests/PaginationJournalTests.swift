import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import TestSupport
import Testing

@testable import ConvexLocal

/// Journals on the sync protocol: sent with each result, honoured in `Add`, kept per subscription.
@Suite struct PaginationJournalTests {
    @Test func aSubscriptionsJournalTravelsWithItsResultsAndComesBackInAdd() throws {
        var session = SyncSession(adminKey: nil)
        let ts = ConvexTimestamp(nanoseconds: 1_000)
        _ = session.receive(.connect(.init(sessionId: "s", connectionCount: 0, lastCloseReason: nil)), latestTs: ts)
        _ = session.receive(
            .modifyQuerySet(
                .init(
                    baseVersion: 0, newVersion: 1,
                    modifications: [.add(.init(queryId: 0, udfPath: "feed:list", journal: "J0"))])),
            latestTs: ts)
        #expect(session.pendingEvaluations().first?.journal == "J0")
        let transition = session.completeUpdate(
            evaluations: [0: .updated(value: 1.0, logLines: [], journal: "J1")], readTables: [0: ["feed"]], ts: ts)
        guard case .transition(let t)? = transition, case .queryUpdated(_, _, _, let journal)? = t.modifications.first
        else { Issue.record("no QueryUpdated"); return }
        #expect(journal == "J1")
        _ = session.invalidate(tables: ["feed"])
        #expect(session.pendingEvaluations().first?.journal == "J1")
    }

    @Test func aPaginatedSubscriptionOverTheSyncSocketKeepsItsEndByItsJournal() async throws {
        try await withLocalDeployment(.init(port: 0)) { deployment in
            for i in 0..<4 { _ = try deployment.mutation("feed:post", ["body": .string("p\(i)")]) }
            // The engine itself: the journal of a first page holds its end when a post arrives before it.
            let engine = deployment.core.engine
            let args: [String: ConvexValue] = ["paginationOpts": ["numItems": 2.0, "cursor": .null]]
            let first = engine.runQuery(path: "feed:list", args: args, caller: .unauthenticated)
            let journal = try #require(first.journal)
            _ = try deployment.mutation("feed:post", ["body": "p4"])
            let again = engine.runQuery(
                path: "feed:list", args: args, caller: .unauthenticated, journal: QueryJournal(decoding: journal))
            guard case .object(let page)? = try? again.result.get() else { Issue.record("no page"); return }
            #expect(FeedPaginationTests.bodies(page) == ["p4", "p3", "p2"])
            #expect(again.journal == journal)
            let fresh = engine.runQuery(path: "feed:list", args: args, caller: .unauthenticated)
            guard case .object(let freshPage)? = try? fresh.result.get() else { Issue.record("no page"); return }
            #expect(FeedPaginationTests.bodies(freshPage) == ["p4", "p3"])
        }
    }
}
