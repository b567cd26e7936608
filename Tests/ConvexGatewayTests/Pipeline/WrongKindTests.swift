import ConvexGateway
import Foundation
import TestSupport
import Testing

/// A function called as the wrong kind is, for the caller, no function of that kind: 404, never a 5xx (found by
/// schemathesis calling a query's example path as a mutation), whose message names the route for its kind.
@Suite(.timeLimit(.minutes(5)))
struct WrongKindTests {
    @Test func aQueryCalledAsAMutationOrActionIs404() async throws {
        try await TestGateway.run(.inProcess) { h in
            let asMutation = try await h.post("/mutation/messages:list", json: "{}")
            #expect(asMutation.status == 404)
            #expect(asMutation.errorCode == "FunctionNotFound")
            #expect(asMutation.text.contains("messages:list"))
            let asAction = try await h.post("/action/messages:list", json: "{}")
            #expect(asAction.status == 404)
            #expect(asAction.text.contains("Call it with GET or POST /query/messages:list."), "\(asAction.text)")
            let mutationAsQuery = try await h.get("/query/messages:send")
            #expect(mutationAsQuery.status == 404)
            #expect(
                mutationAsQuery.text.contains("Call it with POST /mutation/messages:send."), "\(mutationAsQuery.text)")
            let actionAsMutation = try await h.post("/mutation/conformance:add", json: #"{"a":1,"b":2}"#)
            #expect(
                actionAsMutation.text.contains("Call it with POST /action/conformance:add."), "\(actionAsMutation.text)"
            )
            let mutationAsStream = try await h.get("/subscribe/messages:send")
            #expect(mutationAsStream.status == 404)
        }
    }
}
