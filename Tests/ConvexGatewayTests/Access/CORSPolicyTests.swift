import Clocks
import ConvexValues
import Foundation
import HTTPFields
import Testing

@testable import ConvexGateway

struct CORSPolicyTests {
    @Test func parsesOrigins() throws {
        #expect(
            try CORSPolicy.origins("https://App.example.com, http://localhost:3000") == [
                "https://app.example.com", "http://localhost:3000",
            ])
        #expect(try CORSPolicy.origins("*") == ["*"])
        for bad in ["app.example.com", "https://a.com/path", "ftp://a.com", "https://", "https://a b.com"] {
            #expect(throws: CORSOriginError.self, "\(bad)") { try CORSPolicy.origins(bad) }
        }
    }

    @Test func headersForListedOriginsEchoTheOrigin() {
        let policy = CORSPolicy(origins: ["https://app.example.com"])
        #expect(policy.allows(origin: "https://APP.example.com"))
        #expect(!policy.allows(origin: "https://evil.example.com"))
        #expect(!policy.allows(origin: "null"))
        let headers = Dictionary(
            policy.responseHeaders(origin: "https://app.example.com"), uniquingKeysWith: { a, _ in a })
        #expect(headers["Access-Control-Allow-Origin"] == "https://app.example.com")
        #expect(headers["Vary"] == "Origin")
        #expect(headers["Access-Control-Allow-Credentials"] == nil)
        #expect(headers["Access-Control-Expose-Headers"] == "ETag, Retry-After, Convex-Timestamp")
    }

    @Test func wildcardWithCredentialsEchoesTheOriginAndIsRefused() throws {
        let open = CORSPolicy(origins: ["*"])
        let openHeaders = open.responseHeaders(origin: "https://x.test")
        #expect(openHeaders.first?.0 == "Access-Control-Allow-Origin")
        #expect(openHeaders.first?.1 == "*")
        try open.check()
        let credentialed = CORSPolicy(origins: ["*"], allowCredentials: true)
        let headers = Dictionary(
            credentialed.responseHeaders(origin: "https://x.test"), uniquingKeysWith: { a, _ in a })
        #expect(headers["Access-Control-Allow-Origin"] == "https://x.test")
        #expect(headers["Access-Control-Allow-Credentials"] == "true")
        // Such a policy is never served: Gateway.start() checks it.
        #expect(throws: CORSOriginError.self) { try credentialed.check() }
        try CORSPolicy(origins: ["https://app.test"], allowCredentials: true).check()
    }

    @Test func anEmptyOriginIsNeverAllowed() {
        #expect(!CORSPolicy(origins: ["*"]).allows(origin: ""))
        #expect(!CORSPolicy(origins: ["*"], allowCredentials: true).allows(origin: ""))
        #expect(!CORSPolicy(origins: ["https://app.test"]).allows(origin: ""))
    }
}
