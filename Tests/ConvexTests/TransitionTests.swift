import ConvexSyncProtocol
import ConvexValues
import Testing

@testable import Convex

/// Transition boundaries: ``ConvexClient/transitions()`` and ``ConvexQuerySet``, against the local deployment.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct TransitionTests {
    static let division: [String: ConvexValue] = ["division": "AL Central"]

    @Test func oneMutationChangingTwoQueriesIsOneTransitionNamingBoth() async throws {
        try await withClientAndDeployment { client, _ in
            let transitions = client.transitions()
            var iterator = transitions.makeAsyncIterator()
            var leader = client.subscribe(to: "mlb:first_place_team", with: Self.division).makeAsyncIterator()
            var teams = client.subscribe(to: "mlb:teams", with: Self.division).makeAsyncIterator()
            _ = try await leader.next()
            _ = try await teams.next()
            // The first results: one transition or more, depending on when each query joined the set.
            var named: Set<String> = []
            var lastTS = ConvexTimestamp.zero
            while named.count < 2, let transition = await iterator.next() {
                named.formUnion(transition.changes.map(\.functionPath))
                lastTS = transition.ts
            }
            try await client.mutation("mlb:record_win", with: ["team": "Guardians"])
            let win = try #require(await iterator.next())
            #expect(win.ts > lastTS)
            #expect(Set(win.changes.map(\.functionPath)) == ["mlb:first_place_team", "mlb:teams"])
            let leaderResult = try #require(win.changes.first { $0.functionPath == "mlb:first_place_team" })
            #expect(try leaderResult.result.get()["wins"] == .int64(81))
            #expect(leaderResult.arguments == Self.division)
        }
    }

    @Test func anotherClientsCommitMovesThisViewOnlyWhenAsked() async throws {
        try await withClientAndDeployment { reader, deployment in
            let (first, readAt) = try await reader.queryStamped("conformance:counter", with: ["name": "view"])
            #expect(first == .int64(0))
            #expect(readAt == reader.viewTimestamp)
            let set = reader.makeQuerySet()
            var updates = set.updates.makeAsyncIterator()
            _ = set.add("conformance:counter", with: ["name": "untouched"])
            while let update = await updates.next(), update.changes.isEmpty {}  // until the member's first result
            try await ConvexClient.withClient(deploymentUrl: deployment.url) { writer in
                let (count, commit) = try await writer.mutationStamped(
                    "conformance:increment", with: ["name": "elsewhere"])
                #expect(count == .int64(1))
                let committed = try #require(commit)
                #expect(writer.viewTimestamp >= committed, "the writer's own view includes its commit")
                // None of the reader's queries changed: as on the Convex backend, its view stays where it was…
                #expect(reader.viewTimestamp < committed)
                // …until it asks for the latest snapshot.
                let moved = await reader.waitForView(atLeast: committed, timeout: .seconds(10))
                #expect(moved >= committed)
                // The query set hears of the move, with no changes.
                var update = try #require(await updates.next())
                while update.ts < committed, let next = await updates.next() {
                    #expect(next.changes.isEmpty)
                    update = next
                }
                #expect(update.changes.isEmpty)
                #expect(update.ts >= committed)
                // A timestamp the deployment has not reached is not reached.
                let future = ConvexTimestamp(nanoseconds: UInt64(Int64.max))
                #expect(await reader.waitForView(atLeast: future, timeout: .milliseconds(300)) < future)
            }
            set.close()
        }
    }

    @Test func aQuerySetGetsItsMembersResultsTogetherAndALateMemberJoinsAtTheCurrentSnapshot() async throws {
        try await withClientAndDeployment { client, _ in
            let set = client.makeQuerySet()
            var updates = set.updates.makeAsyncIterator()
            let leader = set.add("mlb:first_place_team", with: Self.division)
            let teams = set.add("mlb:teams", with: Self.division)
            var first: [ConvexQuerySet.Member: ConvexValue] = [:]
            while first.count < 2, let update = await updates.next() {
                for change in update.changes { first[change.member] = try change.result.get() }
            }
            #expect(first[leader]?["wins"] == .int64(80))

            try await client.mutation("mlb:record_win", with: ["team": "Guardians"])
            let win = try #require(await updates.next())
            #expect(Set(win.changes.map(\.member)) == [leader, teams])

            // A member of a query the client already holds gets its result at once, at the current snapshot.
            let again = set.add("mlb:first_place_team", with: Self.division)
            let joined = try #require(await updates.next())
            #expect(joined.changes.map(\.member) == [again])
            #expect(joined.ts == win.ts)
            #expect(try joined.changes[0].result.get()["wins"] == .int64(81))

            set.remove(again)
            set.close()
            #expect(await updates.next() == nil)
        }
    }
}
