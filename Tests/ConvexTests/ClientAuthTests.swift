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
struct ClientAuthTests {
    @Test func userTokenIsSeenByFunctions() async throws {
        try await withClientAndDeployment { client, _ in
            #expect(try await client.query("conformance:whoami")["identity"] == .null)
            client.setAuth(token: makeJWT(#"{"sub":"user-1","iss":"https://issuer.test","name":"Ada"}"#))
            await eventually("the identity is applied") {
                (try? await client.query("conformance:whoami"))?["identity"]?["subject"] == "user-1"
            }
            let identity = try await client.query("conformance:whoami")["identity"]
            #expect(identity?["name"] == "Ada")
            client.clearAuth()
            await eventually("the identity is cleared") {
                (try? await client.query("conformance:whoami"))?["identity"] == .null
            }
        }
    }

    @Test func liveSubscriptionFollowsIdentityChanges() async throws {
        try await withClientAndDeployment { (client, _) async throws in
            var whoami = client.subscribe(to: "conformance:whoami").makeAsyncIterator()
            #expect(try await whoami.next()?["identity"] == .null)
            client.setAuth(token: makeJWT(#"{"sub":"user-2","iss":"https://issuer.test"}"#))
            #expect(try await whoami.next()?["identity"]?["subject"] == "user-2")
        }
    }

    @Test func adminKeyIsAccepted() async throws {
        try await withClientAndDeployment(adminKey: "secret-key") { (client, _) async throws in
            client.setAdminAuth(key: "secret-key")
            #expect(try await client.query("conformance:whoami")["isAdmin"] == true)
            #expect(try await client.query("conformance:internalQuery") == "internal ok")
        }
    }

    @Test func rejectedCredentialsSurfaceAndStopRetrying() async throws {
        try await withClientAndDeployment(adminKey: "secret-key") { client, deployment in
            let states = client.connectionStates
            client.setAdminAuth(key: "wrong-key")
            let error = await #expect(throws: ConvexClientError.self) {
                try await client.query("conformance:whoami")
            }
            #expect(error?.code == .authenticationFailed)
            var failure: String?
            for await state in states {
                if case .authenticationFailed(let message) = state {
                    failure = message
                    break
                }
            }
            #expect(failure != nil)
            let opened = client.socketsOpened
            // Real time: the absence of a retry is seen only over a window of several reconnect backoffs (100 ms at
            // first, on the client's clock, here the real one); no event marks a retry that is not made.
            try await Task.sleep(for: .milliseconds(500))
            #expect(client.socketsOpened == opened, "no silent retry loop")
            #expect(deployment.syncConnectionCount == 0)
            // New credentials resume the client.
            client.setAdminAuth(key: "secret-key")
            #expect(try await client.query("conformance:whoami")["isAdmin"] == true)
        }
    }

    @Test func tokenProviderIsAskedOnEveryConnect() async throws {
        try await withClientAndDeployment { client, deployment in
            let calls = Mutex(0)
            try await client.setAuthProvider { _ in
                let n = calls.withLock { count in
                    count += 1
                    return count
                }
                return makeJWT(#"{"sub":"refresh-\#(n)","iss":"https://issuer.test"}"#)
            }
            let first = try await client.query("conformance:whoami")["identity"]?["subject"]
            #expect(first == "refresh-2")  // one call when installed, one for the connect
            deployment.closeSyncConnections()
            await eventually("a reconnect asks the provider again") { calls.withLock { $0 } >= 3 }
            await eventually("the refreshed token is used") {
                (try? await client.query("conformance:whoami"))?["identity"]?["subject"] == "refresh-3"
            }
        }
    }

    @Test func throwingTokenProviderFailsVisibly() async throws {
        try await withClientAndDeployment { client, _ in
            struct NoToken: Error {}
            let error = await #expect(throws: ConvexClientError.self) {
                try await client.setAuthProvider { _ in throw NoToken() }
            }
            #expect(error?.code == .authenticationFailed)
        }
    }
}
