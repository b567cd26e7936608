import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Convex

@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClientCallTests {
    @Test func queryReturnsTheDeploymentsValue() async throws {
        try await withClientAndDeployment { client, _ in
            let team = try await client.query("mlb:first_place_team", with: ["division": "AL Central"])
            guard case .string = team["name"], case .int64 = team["wins"], case .array = team["uniformColors"] else {
                Issue.record("unexpected team shape: \(team)")
                return
            }
            #expect(client.connectionState == .connected)
        }
    }

    @Test func connectsToAnIPv6Literal() async throws {
        // A bracketed IPv6 address in the deployment URL reaches the deployment on ::1.
        try await withLocalDeployment(.init(host: "::1", port: 0)) { deployment in
            try await ConvexClient.withClient(deploymentUrl: "http://[::1]:\(deployment.port)") { client in
                let team = try await client.query("mlb:first_place_team", with: ["division": "AL Central"])
                #expect(team["name"] == "Guardians")
            }
        }
    }

    @Test func connectsLazily() async throws {
        try await withClientAndDeployment { client, deployment in
            // Real time: that nothing connects before the first call is seen only over a window; no event marks a
            // connection that is not made.
            try await Task.sleep(for: .milliseconds(200))
            #expect(client.connectionState == .idle)
            #expect(deployment.syncConnectionCount == 0)
            try await client.waitUntilConnected()
            #expect(client.isConnected)
            await eventually("the deployment sees the socket") { deployment.syncConnectionCount == 1 }
        }
    }

    @Test func mutationIsVisibleToTheNextQuery() async throws {
        try await withClientAndDeployment { client, _ in
            for expected in Int64(1)...5 {
                let result = try await client.mutation("conformance:increment", with: ["name": "ryw"])
                #expect(result == .int64(expected))
                // Read-your-writes: the query right after the mutation sees it.
                #expect(try await client.query("conformance:counter", with: ["name": "ryw"]) == .int64(expected))
            }
        }
    }

    @Test func voidMutationAndAction() async throws {
        try await withClientAndDeployment { client, _ in
            try await client.mutation("messages:send", with: ["body": "hello", "channel": "void"])
            try await client.action("conformance:sleep", with: ["ms": 1.0])
            let messages = try await client.query("messages:list", with: ["channel": "void"])
            #expect(messages[0]?["body"] == "hello")
        }
    }

    @Test func actionReturnsItsResult() async throws {
        try await withClientAndDeployment { (client, _) async throws in
            #expect(try await client.action("conformance:add", with: ["a": 1.5, "b": 2.0]) == 3.5)
        }
    }

    @Test func everyValueTypeRoundTrips() async throws {
        let args: [String: ConvexValue] = [
            "null": nil, "int": .int64(-9_007_199_254_740_993), "float": 1.5, "nan": .float64(.nan),
            "negzero": .float64(-0.0), "inf": .float64(.infinity), "bool": true, "string": "xé\u{1}",
            "bytes": .bytes(Data([0, 1, 255])), "array": [1.0, "a", [nil]], "object": ["k": ["deep": .int64(2)]],
        ]
        try await withClientAndDeployment { (client, _) async throws in
            #expect(try await client.query("echo:echo", with: args) == .object(args))
            #expect(try await client.mutation("echo:echoMutation", with: args) == .object(args))
            #expect(try await client.action("echo:echoAction", with: args) == .object(args))
        }
    }

    @Test func functionErrorsAreTyped() async throws {
        try await withClientAndDeployment { (client, _) async throws in
            let convexError = await #expect(throws: ConvexClientError.self) {
                try await client.query("conformance:convexErrorQuery")
            }
            #expect(convexError?.code == .convexError)
            #expect(convexError?.data == ["code": "NOPE", "n": .int64(42)])

            let mutationError = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("conformance:convexError", with: ["data": ["why": "because"]])
            }
            #expect(mutationError?.code == .convexError)
            #expect(mutationError?.data == ["why": "because"])

            let actionError = await #expect(throws: ConvexClientError.self) {
                try await client.action("conformance:convexErrorAction")
            }
            #expect(actionError?.code == .convexError)
            #expect(actionError?.data == "action says no")

            let plain = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("conformance:plainError")
            }
            #expect(plain?.code == .functionFailed)
            #expect(plain?.message.contains("boom") == true)
            #expect(plain?.data == nil)

            let unknown = await #expect(throws: ConvexClientError.self) {
                try await client.query("nowhere:nothing")
            }
            #expect(unknown?.code == .unknownFunction)

            let unknownMutation = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("nowhere:nothing")
            }
            #expect(unknownMutation?.code == .unknownFunction)

            let invalid = await #expect(throws: ConvexClientError.self) {
                try await client.mutation("messages:send", with: ["body": 12.0])
            }
            #expect(invalid?.code == .invalidArguments)
            #expect(invalid?.functionPath == "messages:send")

            // The client is still healthy after all of these.
            #expect(try await client.action("conformance:add", with: ["a": 1.0, "b": 1.0]) == 2.0)
        }
    }
}
