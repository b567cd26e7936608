import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Convex

/// The seed's example type: int64 fields through `@ConvexInt`.
struct BaseballTeam: Decodable, Sendable {
    let name: String
    let uniformColors: [String]
    @ConvexInt var wins: Int
    @ConvexInt var losses: Int
}

struct DivisionArgs: Encodable {
    let division: String
}

struct IncrementArgs: Encodable {
    let name: String
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientTypedTests {
    @Test func typedSubscriptionWithConvexIntFields() async throws {
        try await withClientAndDeployment { client, _ in
            let teams = client.subscribe(
                to: "mlb:first_place_team", with: ["division": "AL Central"], yielding: BaseballTeam.self)
            var iterator = teams.makeAsyncIterator()
            let leader = try #require(try await iterator.next())
            #expect(!leader.uniformColors.isEmpty)
            // Record a win for the leader: the typed subscription sees the new count.
            let updated: BaseballTeam = try await client.mutation(
                "mlb:record_win", with: ["team": .string(leader.name)])
            #expect(updated.wins == leader.wins + 1)
            let next = try #require(try await iterator.next())
            #expect(next.name == leader.name)
            #expect(next.wins == leader.wins + 1)
        }
    }

    @Test func typedCallsInferTheResultType() async throws {
        try await withClientAndDeployment { client, _ in
            let team: BaseballTeam = try await client.query(
                "mlb:first_place_team", with: DivisionArgs(division: "AL East"))
            #expect(!team.name.isEmpty)
            let count: Int = try await client.mutation("conformance:increment", with: IncrementArgs(name: "typed"))
            #expect(count == 1)
            let sum: Double = try await client.action("conformance:add", with: ["a": 0.5, "b": 0.25])
            #expect(sum == 0.75)
            // Without type context the untyped value comes back, and a bare call is the Void form.
            let raw = try await client.query(
                "conformance:counter", with: IncrementArgs(name: "typed"), yielding: ConvexValue.self)
            #expect(raw == .int64(1))
            try await client.mutation("conformance:increment", with: IncrementArgs(name: "typed"))
            try await client.mutation("conformance:increment", with: ["name": "typed"])
            #expect(try await client.query("conformance:counter", with: ["name": "typed"]) == .int64(3))
        }
    }

    @Test func resultThatDoesNotDecodeIsADecodingFailure() async throws {
        try await withClientAndDeployment { client, _ in
            // A float64 is not an int64: `Int` fields need int64 values.
            let error = await #expect(throws: ConvexClientError.self) {
                let _: Int = try await client.action("conformance:add", with: ["a": 1.0, "b": 2.0])
            }
            #expect(error?.code == .decodingFailed)
            var results = client.subscribe(to: "conformance:counter", with: ["name": "x"], yielding: String.self)
                .results.makeAsyncIterator()
            guard case .failure(let failure)? = await results.next() else {
                Issue.record("expected a decoding failure element")
                return
            }
            #expect(failure.code == .decodingFailed)
        }
    }

    @Test func argumentsThatAreNotAnObjectAreRejected() async throws {
        try await withClientAndDeployment { client, _ in
            let error = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("conformance:increment", with: [1, 2, 3])
            }
            #expect(error?.code == .invalidArguments)
        }
    }
}
