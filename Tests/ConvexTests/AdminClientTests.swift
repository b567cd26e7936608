import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Convex

/// The admin client's function-spec call against a real local deployment.
@Suite(.timeLimit(.minutes(5))) struct AdminClientTests {
    @Test func functionSpecWithTheAdminKeyAndARefusalWithoutIt() async throws {
        try await withLocalDeployment(.init(port: 0, adminKey: "test-admin-key")) { deployment in
            // 30 s, not the 5 s default: the whole suite runs in parallel, so a loopback fetch can wait seconds.
            let spec = try await ConvexAdminClient(deploymentURL: deployment.url + "/", adminKey: "test-admin-key")
                .functionSpec(timeout: .seconds(30))
            let list = try #require(spec.publicFunction(try UdfPath(parsing: "items:list")))
            #expect(list.kind == .query)
            #expect(spec.functions["items:update"]?.args == .object(["id": .id("items"), "text": .string]))
            do throws(FunctionSpecError) {
                _ = try await ConvexAdminClient(deploymentURL: deployment.url, adminKey: "wrong")
                    .functionSpec(timeout: .seconds(30))
                Issue.record("a wrong admin key was accepted")
            } catch {
                #expect(error.message.contains("answered 401") || error.message.contains("answered 403"))
                #expect(!error.message.contains("wrong"))
            }
            let client = ConvexAdminClient(deploymentURL: deployment.url, adminKey: "test-admin-key")
            #expect(!"\(client)".contains("test-admin-key"))
        }
    }
}
