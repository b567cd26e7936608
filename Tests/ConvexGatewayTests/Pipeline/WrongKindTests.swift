import ConvexGateway
import Foundation
import TestSupport
import Testing

/// A function called as the wrong kind is, for the caller, no function of that kind: 404, never a 5xx (found by
/// schemathesis calling a query's example path as a mutation).
@Suite(.timeLimit(.minutes(1)))
struct WrongKindTests {
    @Test func aQueryCalledAsAMutationOrActionIs404() async throws {
        try await GatewayHarness.run { h in
            let asMutation = try await h.post("/mutation/messages:list", json: "{}")
            #expect(asMutation.status == 404)
            #expect(asMutation.errorCode == "FunctionNotFound")
            #expect(asMutation.text.contains("messages:list"))
            let asAction = try await h.post("/action/messages:list", json: "{}")
            #expect(asAction.status == 404)
            let mutationAsQuery = try await h.get("/query/messages:send")
            #expect(mutationAsQuery.status == 404)
            let mutationAsStream = try await h.get("/subscribe/messages:send")
            #expect(mutationAsStream.status == 404)
        }
    }
}
