import ConvexGateway
import Foundation
import HTTPFields
import TestSupport
import Testing

@testable import ConvexGateway

/// The hot path (Pipeline/HotPath.swift) and full handling give the same answer, byte for byte: the same requests go
/// to a gateway that answers remembered targets on the hot path and to one that handles every request in full, both on one
/// deployment, and the answers are compared whole (status line, every header but `Date`, body).
@Suite(.timeLimit(.minutes(5)))
struct HotPathParityTests {
    static let origin = "https://app.test"

    static func configure(_ configuration: inout GatewayConfiguration) {
        configuration.access.cors = CORSPolicy(origins: [Self.origin])
    }

    /// An answer as compared: the status, the headers but `Date` in the order sent, and the body.
    static func comparable(_ response: TestResponse) -> String {
        let headers = response.head.headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0): \($0.1)" }
        return "\(response.status)\n" + headers.joined(separator: "\n") + "\n\n"
            + response.body.map { String(format: "%02x", $0) }.joined()
    }

    @Test func theHotPathAndFullHandlingAnswerAlike() async throws {
        try await TestGateway.run(.inProcess, configure: Self.configure) { quick in
            try await quick.withReplica(configure: { full in
                full.hotPath = false
                Self.configure(&full)
            }) { slowPort in

                // A value of more than 1 KiB, so gzip applies.
                for index in 0..<12 {
                    _ = try await quick.post(
                        "/mutation/messages:send",
                        json:
                            #"{"body":"message \#(index) of a channel long enough to be sent gzip-coded","channel":"parity"}"#
                    )
                }
                let targets = [
                    "/query/messages:list?channel=parity", "/query/messages:list?channel=parity&format=encoded",
                ]
                for target in targets {
                    _ = try await HotPathTests.warm(quick, target)
                    _ = try await Self.get(slowPort, target)
                }
                // One more change, seen by both gateways' upstream connections: both then hold the value at the same
                // snapshot (the change's commit), so even `Convex-Timestamp` must agree.
                _ = try await quick.post("/mutation/messages:send", json: #"{"body":"last","channel":"parity"}"#)
                for target in targets {
                    var seen = 0
                    for _ in 0..<200 where seen < 2 {
                        seen = 0
                        if try await quick.get(target).text.contains("last") { seen += 1 }
                        if try await Self.get(slowPort, target).text.contains("last") { seen += 1 }
                    }
                    #expect(seen == 2, "\(target): both gateways have the last change")
                }
                var compared = 0
                for target in targets {
                    let first = try await quick.get(target)
                    let etag = try #require(first.header("ETag"))
                    let requests: [[String: String]] = [
                        [:],
                        ["Origin": Self.origin],
                        ["Accept-Encoding": "gzip"],
                        ["Accept-Encoding": "gzip;q=0, identity"],
                        ["If-None-Match": etag],
                        ["If-None-Match": "W/\(etag), \"other\""],
                        ["If-None-Match": EntityTag.gzipVariant(of: etag), "Accept-Encoding": "gzip"],
                        ["If-None-Match": "\"other\""],
                        ["Origin": Self.origin, "Accept-Encoding": "gzip", "If-None-Match": etag],
                        ["Accept": "application/json"],
                    ]
                    for headers in requests {
                        let fast = try await quick.get(target, headers: headers)
                        let slowAnswer = try await Self.get(slowPort, target, headers: headers)
                        #expect(
                            Self.comparable(fast) == Self.comparable(slowAnswer),
                            "\(target) \(headers):\nquick:\n\(Self.comparable(fast))\nfull:\n\(Self.comparable(slowAnswer))"
                        )
                        compared += 1
                    }
                    // The quick gateway answered from its prepared responses: one per variant asked for.
                    let remembered = try #require(quick.gateway.core.hotPath.targets.route(for: target))
                    let variants = remembered.prepared.withLock { $0 }?.variantKeys ?? []
                    #expect(variants.contains { $0.hasPrefix("gzip 200") }, "\(variants)")
                    #expect(variants.contains { $0.hasPrefix("identity 304") }, "\(variants)")
                    #expect(
                        variants.contains { $0.contains("Access-Control-Allow-Origin: \(Self.origin)") }, "\(variants)")
                }
                #expect(compared == 20)
            }
        }
    }

    static func get(_ port: Int, _ target: String, headers: [String: String] = [:]) async throws -> TestResponse {
        try await blocking { try RawConnection.request("GET", target, port: port, headers: headers) }
    }
}
