import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import TestSupport
import Testing

@testable import ConvexLocal

/// `feed:list`, the embedded deployment's paginated demo query, through the deployment's functions.
@Suite struct FeedPaginationTests {
    static func page(_ deployment: LocalDeployment, _ options: [String: ConvexValue]) throws -> [String: ConvexValue] {
        guard case .object(let page) = try deployment.query("feed:list", ["paginationOpts": .object(options)]) else {
            throw TestFailure("feed:list did not return an object")
        }
        return page
    }

    static func bodies(_ page: [String: ConvexValue]) -> [String] {
        guard case .array(let items)? = page["page"] else { return [] }
        return items.compactMap {
            if case .object(let doc) = $0, case .string(let body)? = doc["body"] { body } else { nil }
        }
    }

    @Test func newestFirstPagesAndTheOrderSettingMakesOldCursorsInvalid() async throws {
        try await withLocalDeployment(.init(port: 0)) { deployment in
            for i in 0..<5 { _ = try deployment.mutation("feed:post", ["body": .string("p\(i)")]) }
            let first = try Self.page(deployment, ["numItems": 2.0, "cursor": .null])
            #expect(Self.bodies(first) == ["p4", "p3"] && first["isDone"] == false)
            let second = try Self.page(deployment, ["numItems": 5.0, "cursor": first["continueCursor"]!])
            #expect(Self.bodies(second) == ["p2", "p1", "p0"] && second["isDone"] == true)
            _ = try deployment.mutation("feed:setOrder", ["order": "oldest"])
            #expect(Self.bodies(try Self.page(deployment, ["numItems": 2.0, "cursor": .null])) == ["p0", "p1"])
            #expect(throws: ConvexError.self) {
                try Self.page(deployment, ["numItems": 2.0, "cursor": first["continueCursor"]!])
            }
            #expect(throws: (any Error).self) {
                try deployment.query("feed:list", ["paginationOpts": ["numItems": 2.0]])
            }
        }
    }
}
