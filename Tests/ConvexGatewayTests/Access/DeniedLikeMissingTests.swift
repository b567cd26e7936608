import ConvexValues
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// A function the denylist refuses answers as a function the deployment does not have, through every route (`GET`,
/// `POST`, an event stream, a stream of many subscriptions, a batch), Request ID included: each answer has a fresh one
/// of the same form, so neither the text nor two answers tell a denied function from a missing one.
@Suite(.timeLimit(.minutes(5)))
struct DeniedLikeMissingTests {
    /// One way to ask for a function (a route and a method): its target for a function with a distinguishing argument
    /// `n`, and where its answer's error object is.
    struct Asking: Sendable, CustomTestStringConvertible {
        var name: String
        var method: String
        /// The target for `function` with the argument `n`.
        var target: @Sendable (_ function: String, _ n: Int) -> String
        var body: (@Sendable (_ n: Int) -> String)? = nil
        var headers: [String: String] = [:]
        /// The error's status: a batch answers 200 with the query's error under `errors`.
        var status = 404
        var testDescription: String { name }

        /// The error object of an answer.
        func error(_ response: TestResponse) -> ConvexValue? {
            status == 200 ? response.json?["errors"]?["a"] : response.json?["error"]
        }
    }

    /// Denied functions, one per kind, and a missing name of the same length beside each.
    static let denied = (query: "messages:list", mutation: "messages:send", action: "conformance:add")
    static let missing = (query: "messages:lisx", mutation: "messages:senx", action: "conformance:adx")

    static let routes: [Asking] = [
        Asking(name: "GET /query/", method: "GET", target: { "/query/\($0)?n=\($1)" }),
        Asking(name: "POST /query/", method: "POST", target: { f, _ in "/query/\(f)" }, body: { #"{"n":\#($0)}"# }),
        Asking(
            name: "GET /subscribe/", method: "GET", target: { "/subscribe/\($0)?n=\($1)" },
            headers: ["Accept": "text/event-stream"]),
        Asking(
            name: "GET /query/ as an event stream", method: "GET", target: { "/query/\($0)?n=\($1)" },
            headers: ["Accept": "text/event-stream"]),
        Asking(
            name: "GET /subscribe?sub.a=", method: "GET",
            target: { "/subscribe?sub.a=\($0)&args.a=%7B%22n%22%3A\($1)%7D" },
            headers: ["Accept": "text/event-stream"]),
        Asking(
            name: "GET /query?q.a= (batch)", method: "GET", target: { "/query?q.a=\($0)&args.a=%7B%22n%22%3A\($1)%7D" },
            status: 200),
    ]

    static let calls: [Asking] = [
        Asking(
            name: "POST /mutation/", method: "POST", target: { f, _ in "/mutation/\(f)" }, body: { #"{"n":\#($0)}"# }),
        Asking(name: "POST /action/", method: "POST", target: { f, _ in "/action/\(f)" }, body: { #"{"n":\#($0)}"# }),
    ]

    static func run(_ body: (GatewayHarness) async throws -> Void) async throws {
        let deny = try FunctionPattern.list("\(denied.query),\(denied.mutation),\(denied.action)")
        try await TestGateway.run(.inProcess, configure: { $0.access.functions.deny = deny }) { h in try await body(h) }
    }

    /// Asks `route` for `function` twice (different arguments, so neither answer is a kept one) and checks that
    /// `function` (denied) and `other` (missing) are answered alike, each with fresh Request IDs.
    static func check(_ route: Asking, denied function: String, missing other: String, _ h: GatewayHarness) async throws
    {
        var messages: [String: [String]] = [:]
        for (name, n) in [(function, 1), (other, 1), (function, 2), (other, 2)] {
            let response = try await h.request(
                route.method, route.target(name, n), headers: route.headers, body: route.body?(n))
            #expect(response.status == route.status, "\(route.name) \(name): \(response.text)")
            let object = try #require(route.error(response), "\(route.name) \(name): \(response.text)")
            #expect(object["code"] == "FunctionNotFound", "\(route.name) \(name): \(response.text)")
            guard case .string(let message)? = object["message"] else {
                Issue.record("\(route.name) \(name): no message in \(response.text)")
                continue
            }
            messages[name, default: []].append(message)
        }
        let refused = messages[function] ?? []
        let unknown = messages[other] ?? []
        // The same text, once the Request ID is blanked and the names swapped.
        for (a, b) in zip(refused, unknown) {
            #expect(
                AccessEndToEndTests.withoutRequestID(a)
                    == AccessEndToEndTests.withoutRequestID(b.replacingOccurrences(of: other, with: function)),
                "\(route.name): \(a) against \(b)")
            #expect(!a.contains("npx") && !b.contains("npx"), "\(route.name): \(a) / \(b)")
        }
        // A Request ID of the same form in each, and a fresh one in every answer.
        let ids = (refused + unknown).map(requestID)
        #expect(ids.count == 4, "\(route.name): \(refused + unknown)")
        #expect(ids.allSatisfy { $0?.count == 16 && $0?.allSatisfy(\.isHexDigit) == true }, "\(route.name): \(ids)")
        #expect(Set(ids).count == ids.count, "\(route.name): a Request ID repeats: \(ids)")
    }

    /// The 16 hex digits of `[Request ID: …]`, if the message has one.
    static func requestID(_ message: String) -> String? {
        guard let start = message.range(of: "[Request ID: "),
            let end = message[start.upperBound...].firstIndex(of: "]")
        else { return nil }
        return String(message[start.upperBound..<end])
    }

    @Test(arguments: routes)
    func aDeniedQueryAnswersAsAMissingOne(route: Asking) async throws {
        try await Self.run { h in try await Self.check(route, denied: Self.denied.query, missing: Self.missing.query, h)
        }
    }

    @Test func aDeniedMutationOrActionAnswersAsAMissingOne() async throws {
        try await Self.run { h in
            try await Self.check(Self.calls[0], denied: Self.denied.mutation, missing: Self.missing.mutation, h)
            try await Self.check(Self.calls[1], denied: Self.denied.action, missing: Self.missing.action, h)
        }
    }

    @Test func theFilterCutsADeploymentsAdviceAndKeepsItsRequestID() {
        let convex =
            "[Request ID: 0123456789abcdef] Server Error\nCould not find public function for 'a:b'. "
            + "Did you forget to run `npx convex dev` or `npx convex deploy`?"
        #expect(
            FunctionFilter.withoutAdvice(convex)
                == "[Request ID: 0123456789abcdef] Server Error\nCould not find public function for 'a:b'.")
        let local =
            "[Request ID: 0123456789abcdef] Server Error\nCould not find public function for 'a:b'. "
            + "Did you forget to register it with the local deployment?"
        #expect(FunctionFilter.withoutAdvice(local) == FunctionFilter.withoutAdvice(convex))
        #expect(
            AccessEndToEndTests.withoutRequestID(FunctionFilter.notFoundMessage("a:b"))
                == AccessEndToEndTests.withoutRequestID(FunctionFilter.withoutAdvice(convex)))
        let other = "[Request ID: 0123456789abcdef] Server Error\nUncaught Error: boom"
        #expect(FunctionFilter.withoutAdvice(other) == other)
    }

    /// The same asking, repeated, gives a denied function the same pattern of Request IDs as a missing one (a `GET`
    /// of the same arguments again reads the kept subscription's answer, a `POST` asks anew): the deployment answers
    /// both, so no sequence of requests tells them apart.
    @Test func aSequenceOfAskingsRepeatsRequestIDsAlike() async throws {
        try await Self.run { h in
            var patterns: [[Bool]] = []
            for function in [Self.denied.query, Self.missing.query] {
                var ids: [String?] = []
                for asking in [Self.routes[0], Self.routes[0], Self.routes[1], Self.routes[0]] {
                    let response = try await h.request(
                        asking.method, asking.target(function, 7), headers: asking.headers, body: asking.body?(7))
                    guard case .string(let message)? = asking.error(response)?["message"] else {
                        Issue.record("\(function): \(response.text)")
                        continue
                    }
                    ids.append(Self.requestID(message))
                }
                // Which answers share a Request ID with an earlier one.
                patterns.append(ids.indices.map { index in ids[..<index].contains(ids[index]) })
            }
            #expect(
                patterns.count == 2 && patterns[0] == patterns[1],
                "denied \(patterns.first ?? []) missing \(patterns.last ?? [])")
        }
    }
}
