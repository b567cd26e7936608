import ConvexGateway
import ConvexValues
import Foundation
import TestSupport
import Testing

/// A paginated query's page as a live stream: raw HTTP stream → gateway → Convex client → local deployment.
@Suite(.timeLimit(.minutes(5)))
struct PaginatedStreamEndToEndTests {
    static func bodies(_ event: ReceivedEvent) throws -> [String] {
        let value = try ConvexValue(plainJSON: Array(event.data.utf8))
        guard case .array(let posts)? = value["page"] else { throw TestFailure("not a page: \(event.data)") }
        return posts.compactMap { if case .string(let body)? = $0["body"] { body } else { nil } }
    }

    /// The gateway's upstream connection drops (the deployment closes every sync socket): its client re-adds the page
    /// with the journal of its last result, so the page keeps its end and never shrinks back to `numItems`.
    @Test("a live first page keeps its end when the gateway's upstream connection is replaced")
    func aLivePageKeepsItsEndAcrossAnUpstreamReconnect() async throws {
        try await TestGateway.run(.inProcess) { h in
            for i in 0..<4 { _ = try h.deployment.mutation("feed:post", ["body": .string("p\(i)")]) }
            let options = #"{"numItems":2,"cursor":null}"#.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let stream = try await h.openStream("/subscribe/feed:list?paginationOpts=\(options)")
            defer { stream.close() }
            #expect(try Self.bodies(try #require(await stream.nextEventAsync())) == ["p3", "p2"])
            _ = try h.deployment.mutation("feed:post", ["body": "p4"])
            #expect(try Self.bodies(try #require(await stream.nextEventAsync())) == ["p4", "p3", "p2"])

            h.deployment.closeSyncConnections()
            _ = try h.deployment.mutation("feed:post", ["body": "p5"])
            var seen: [[String]] = []
            while seen.last?.first != "p5" {
                seen.append(try Self.bodies(try #require(await stream.nextEventAsync())))
            }
            #expect(seen.last == ["p5", "p4", "p3", "p2"], "pages after the reconnect: \(seen)")
            #expect(seen.allSatisfy { $0.count >= 3 }, "the page never shrank back to numItems: \(seen)")
        }
    }
}
