import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

@Suite struct RouteParsingTests {
    @Test(arguments: [
        ("messages:list", "messages", "list"),
        ("messages", "messages", "default"),
        ("dir/file:fn", "dir/file", "fn"),
        ("messages.js:list", "messages", "list"),
        ("a-b/c_d:_x1", "a-b/c_d", "_x1"),
    ])
    func accepts(text: String, module: String, function: String) throws {
        let path = try UdfPath(parsing: text)
        #expect(path.module == module)
        #expect(path.function == function)
        let route = try Route(rawPath: "/query/\(text)"[...])
        #expect(route.template == Route.queryTemplate && route.function == path)
    }

    /// The route table: one row per template, each found by its own path with its own access class, and a path that
    /// only starts like a fixed one is not it.
    @Test func everyRowOfTheTableIsFoundByItsPath() throws {
        #expect(Set(Route.table.map(\.template)).count == Route.table.count)
        for row in Route.table {
            let path = row.takesFunction ? row.path + "messages:list" : row.path
            let route = try Route(rawPath: path[...])
            #expect(route.template == row.template)
            #expect(route.function == (row.takesFunction ? try UdfPath(parsing: "messages:list") : nil))
            #expect(Route.accessClass(rawPath: path[...]) == row.access)
        }
        #expect(try Route(rawPath: "/query"[...]).template == "/query")
        #expect(throws: GatewayError.self) { try Route(rawPath: "/healthzz"[...]) }
        #expect(Route.accessClass(rawPath: "/nothing"[...]) == .keyed)
    }

    @Test(arguments: [
        "", ":list", "a::b", "../etc:passwd", "a//b:c", "a/./b:c", "a:1x", "a:b-c", "a b:c", "a:__", "a\u{0}:b", "é:x",
        "m.ts:f", "a:", String(repeating: "m", count: 1020), String(repeating: "m", count: 1025),
    ])
    func rejects(text: String) {
        #expect(throws: UdfPathError.self) { try UdfPath(parsing: text) }
        #expect {
            try Route(rawPath: "/subscribe/\(text)"[...])
        } throws: { error in
            (error as? GatewayError)?.status == 400 && (error as? GatewayError)?.code == .invalidFunctionPath
        }
    }
}
