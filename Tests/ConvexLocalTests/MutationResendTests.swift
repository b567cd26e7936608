import Clocks
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing
import TimeSource

@testable import ConvexLocal

/// Mutations resent over real sync sockets: answered from their own session's record, and only from it.
@Suite(.timeLimit(.minutes(5)))
struct MutationResendTests {
    func withDeployment(_ body: (LocalDeployment) async throws -> Void) async throws {
        try await withLocalDeployment(
            .init(port: 0, adminKey: "k", clock: ElapsedClock(TestClock())), logger: SyncWebSocketTests.quietLogger,
            body)
    }

    /// Sends `frames` after Connect on a socket of `session` and returns the first MutationResponse.
    func mutationResponse(
        _ deployment: LocalDeployment, session: String, _ frames: [String]
    ) async throws -> ServerMessage.MutationResponse? {
        let result = try await syncExchange(deployment, send: [connectFrame(session: session)] + frames) { messages in
            messages.contains { if case .mutationResponse = $0 { true } else { false } }
        }
        return result.messages.lazy.compactMap { if case .mutationResponse(let r) = $0 { r } else { nil } }.first
    }

    func increment(_ requestId: UInt32, _ name: String) -> String {
        ClientMessage.mutation(
            .init(requestId: requestId, udfPath: "conformance:increment", args: ["name": .string(name)])
        )
        .jsonText
    }

    /// The flood of the issue: another session runs 65,536 mutations (through the deployment's record, which is what
    /// a socket's mutation goes through, so the test takes seconds rather than minutes), and the first session's
    /// resend is still answered from its record: its counter mutation does not run twice.
    @Test func aResendIsAnsweredFromItsRecordAfterAnotherSessionsFlood() async throws {
        try await withDeployment { deployment in
            let victim = UUID().uuidString
            let first = try await mutationResponse(deployment, session: victim, [increment(7, "victim")])
            #expect(first.map { $0.result == .success(.int64(1)) } == true, "\(String(describing: first))")

            let flooder = UUID().uuidString
            for id in 0..<65_536 {
                let request = ClientMessage.FunctionRequest(
                    requestId: UInt32(id), udfPath: "echo:echoMutation", args: ["n": .float64(Double(id))])
                _ = deployment.core.dedupe.runOnce(sessionId: flooder, caller: .unauthenticated, request: request) {
                    ServerMessage.MutationResponse(
                        requestId: request.requestId, result: .success(.object(request.args)),
                        ts: deployment.latestTimestamp)
                }
            }

            let resent = try await mutationResponse(deployment, session: victim, [increment(7, "victim")])
            #expect(resent == first)
            #expect(try deployment.query("conformance:counter", ["name": "victim"]) == .int64(1), "ran once")
        }
    }

    /// A socket that presents another session's id as another caller, or resends its request id with other arguments,
    /// runs as new and gets its own result; the session's own resend is still answered from its record.
    @Test func aSessionsRecordAnswersOnlyItsCallerAndArguments() async throws {
        try await withDeployment { deployment in
            let session = UUID().uuidString
            let first = try await mutationResponse(deployment, session: session, [increment(3, "who")])
            #expect(first?.result == .success(.int64(1)))

            let admin = ClientMessage.authenticate(.init(baseVersion: 0, token: .admin("k"))).jsonText
            let asAdmin = try await mutationResponse(deployment, session: session, [admin, increment(3, "who")])
            #expect(asAdmin?.result == .success(.int64(2)), "another caller runs as new")

            let otherArgs = try await mutationResponse(deployment, session: session, [increment(3, "else")])
            #expect(otherArgs?.result == .success(.int64(1)), "other arguments run as new")
            #expect(try deployment.query("conformance:counter", ["name": "else"]) == .int64(1))

            let resent = try await mutationResponse(deployment, session: session, [increment(3, "who")])
            #expect(resent == first)
            #expect(try deployment.query("conformance:counter", ["name": "who"]) == .int64(2))
        }
    }
}
