import Clocks
import ConvexValues
import Foundation
import HTTPFields
import Testing

@testable import ConvexGateway

struct FunctionPatternTests {
    @Test(arguments: [
        ("messages:list", "messages:list", true),
        ("messages:list", "messages:lis", false),
        ("messages:*", "messages:list", true),
        ("messages:*", "messages:send", true),
        ("messages:*", "messages/x:list", false),
        ("messages", "messages:default", true),
        ("messages", "messages:list", false),
        ("*", "anything:default", true),
        ("*", "anything:else", false),
        ("admin/**", "admin/users:delete", true),
        ("admin/**", "admin/a/b:c", true),
        ("admin/**", "administrator:x", false),
        ("*:list", "messages:list", true),
        ("*:list", "dir/messages:list", false),
        ("**:list", "dir/messages:list", true),
        ("**:internal*", "a/b:internalReset", true),
        ("**:internal*", "a/b:reset", false),
        ("m?:f", "m1:f", true),
        ("m?:f", "m/:f", false),
        ("**", "x/y:z", true),
    ])
    func matches(pattern: String, path: String, expected: Bool) throws {
        #expect(try FunctionPattern(pattern).matches(path) == expected)
    }

    @Test func refusesPatternsNoPathCanMatch() throws {
        #expect(throws: FunctionPatternError.self) { try FunctionPattern("") }
        #expect(throws: FunctionPatternError.self) { try FunctionPattern("messages:li st") }
        #expect(throws: FunctionPatternError.self) { try FunctionPattern("a%2Fb:c") }
        #expect(try FunctionPattern.list(" a:b , ,c:* ").map(\.description) == ["a:b", "c:*"])
    }

    @Test func denyWinsOverAllow() throws {
        let filter = FunctionFilter(
            allow: try FunctionPattern.list("messages:*,mlb:*"), deny: try FunctionPattern.list("messages:send"))
        #expect(filter.permits("messages:list"))
        #expect(!filter.permits("messages:send"))
        #expect(filter.permits("mlb:first_place_team"))
        #expect(!filter.permits("echo:echoMutation"))
        #expect(FunctionFilter().isOpen)
        #expect(FunctionFilter().permits("any:thing"))
        let denyOnly = FunctionFilter(deny: try FunctionPattern.list("conformance/**,conformance:*"))
        #expect(!denyOnly.permits("conformance:add"))
        #expect(denyOnly.permits("messages:list"))
    }
}
