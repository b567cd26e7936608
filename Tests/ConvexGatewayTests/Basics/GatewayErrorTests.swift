import ConvexGateway
import ConvexLocal
import ConvexValues
import Foundation
import TestSupport
import Testing

/// The error statuses of docs/routes-and-errors.md's error table, against a real gateway and deployment; the table
/// must list every error these tests meet.
@Suite(.timeLimit(.minutes(5)))
struct GatewayErrorTests {
    static let page = "docs/routes-and-errors.md"

    /// The errors the tests below meet, as (status, code).
    static let met: [(status: Int, code: GatewayError.Code)] = [
        (400, .malformedJSON), (400, .invalidArguments), (400, .invalidFunctionPath), (400, .invalidFormat),
        (400, .argumentValidation), (404, .functionNotFound), (404, .routeNotFound), (405, .methodNotAllowed),
        (413, .payloadTooLarge), (415, .unsupportedMediaType), (422, .convexError), (500, .functionFailed),
        (503, .upstreamUnavailable), (503, .overloaded), (504, .upstreamTimeout),
    ]

    /// The errors of `met` that the page's table (under `## Errors`) has no row for, as "<status> <code>".
    static func undocumented(in page: String) -> [String] {
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let heading = lines.firstIndex(of: "## Errors") else { return met.map { "\($0.status) \($0.code)" } }
        let rows = lines[(heading + 1)...].drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }.map { row in
            row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return met.filter { error in
            !rows.contains { cells in
                cells.count > 1
                    && cells[0].split(separator: ",").contains {
                        Int($0.trimmingCharacters(in: .whitespaces)) == error.status
                    }
                    && cells[1].contains("`\(error.code)`")
            }
        }.map { "\($0.status) \($0.code)" }
    }

    @Test func theErrorTableListsEveryErrorTheseTestsMeet() throws {
        let page = try String(contentsOf: GatewayProcess.packageRoot.appendingPathComponent(Self.page), encoding: .utf8)
        let missing = Self.undocumented(in: page)
        #expect(missing.isEmpty, "\(Self.page)'s error table (under '## Errors') has no row for \(missing)")
        // The check fails on a table without one of them.
        let without = page.split(separator: "\n").filter { !$0.hasPrefix("| 422 |") }.joined(separator: "\n")
        #expect(Self.undocumented(in: without) == ["422 ConvexError"])
        #expect(Self.undocumented(in: "") == Self.met.map { "\($0.status) \($0.code)" })
    }

    @Test func badRequestsAre400WithOneErrorShape() async throws {
        try await TestGateway.run(.inProcess) { h in
            let malformed = try await h.post("/mutation/messages:send", json: #"{"body":"#)
            #expect(malformed.status == 400)
            #expect(malformed.errorCode == "MalformedJSON")
            #expect(malformed.json?["error"]?["message"] != nil)

            let notObject = try await h.post("/mutation/messages:send", json: "[1,2]")
            #expect(notObject.status == 400)
            #expect(notObject.errorCode == "InvalidArguments")

            let badQuery = try await h.get("/query/messages:list?channel=a&channel=b")
            #expect(badQuery.status == 400)
            #expect(badQuery.errorCode == "InvalidArguments")

            let badArgs = try await h.get("/query/messages:list?args=%7Bnope")
            #expect(badArgs.status == 400)

            let badPath = try await h.get("/query/..%2Fetc:passwd")
            #expect(badPath.status == 400)
            #expect(badPath.errorCode == "InvalidFunctionPath")

            let badFormat = try await h.get("/query/messages:list?format=xml")
            #expect(badFormat.status == 400)
            #expect(badFormat.errorCode == "InvalidFormat")
        }
    }

    @Test func unknownFunctionIs404AndValidationIs400() async throws {
        try await TestGateway.run(.inProcess) { h in
            let unknown = try await h.get("/query/nope:nothing")
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "FunctionNotFound")
            let unknownMutation = try await h.post("/mutation/nope:nothing", json: "{}")
            #expect(unknownMutation.status == 404)
            let unknownStream = try await h.get("/subscribe/nope:nothing")
            #expect(unknownStream.status == 404)

            let invalid = try await h.post("/mutation/messages:send", json: #"{"body":5}"#)
            #expect(invalid.status == 400)
            #expect(invalid.errorCode == "ArgumentValidationError")

            let noRoute = try await h.get("/nowhere")
            #expect(noRoute.status == 404)
            #expect(noRoute.errorCode == "NotFound")
        }
    }

    @Test func convexErrorIs422WithDataAndOtherFailuresAre500() async throws {
        try await TestGateway.run(.inProcess) { h in
            let convexError = try await h.post("/mutation/mlb:record_win", json: #"{"team":"Nobody"}"#)
            #expect(convexError.status == 422)
            #expect(convexError.errorCode == "ConvexError")
            #expect(convexError.json?["error"]?["data"]?["code"] == .string("UnknownTeam"))

            let failed = try await h.post("/mutation/conformance:plainError", json: "{}")
            #expect(failed.status == 500)
            #expect(failed.errorCode == "FunctionFailed")
            #expect(failed.json?["error"]?["message"] != nil)
        }
    }

    @Test func methodContentTypeAndBodySize() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.maxBodyBytes = 1024 }) { h in
            let wrongMethod = try await h.get("/mutation/messages:send")
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.header("Allow") == "POST")
            let wrongOnQuery = try await h.request("DELETE", "/query/messages:list")
            #expect(wrongOnQuery.status == 405)
            #expect(wrongOnQuery.header("Allow") == "GET, HEAD, POST")

            let xml = try await h.post(
                "/mutation/messages:send", json: "<a/>", headers: ["Content-Type": "application/xml"])
            #expect(xml.status == 415)
            #expect(xml.errorCode == "UnsupportedMediaType")

            let big = try await h.post(
                "/mutation/messages:send", json: #"{"body":""# + String(repeating: "x", count: 4096) + #""}"#)
            #expect(big.status == 413)
            #expect(big.errorCode == "PayloadTooLarge")
        }
    }

    @Test func aBodyPastTheBoundOnBodiesInFlightIs503WithRetryAfter() async throws {
        try await TestGateway.run(
            .inProcess,
            configure: { configuration in
                configuration.maxBodyBytes = 1024
                configuration.maxBodyBytesInFlight = 1024
                // Every body of the test comes from one address: its share is above the bound here.
                configuration.maxBodyBytesPerClient = 4096
            }
        ) { h in
            // A client that has sent a tenth of its body and waits holds those bytes.
            let slow = try RawConnection(port: h.port)
            defer { slow.close() }
            let head = "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            try await blocking {
                try slow.send(head + "Content-Length: 1000\r\n\r\n" + #"{"body":""# + String(repeating: "x", count: 91))
            }
            #expect(await eventually { h.gateway.bodyBytesInFlight == 100 })
            // A body that does not fit beside it is refused from its head, before it is read.
            let refused = try await h.post(
                "/mutation/messages:send", json: #"{"body":""# + String(repeating: "y", count: 1000) + #""}"#)
            #expect(refused.status == 503)
            #expect(refused.errorCode == "Overloaded")
            #expect(refused.header("Retry-After") == "1")
            // One that fits is served.
            let small = try await h.post("/mutation/messages:send", json: #"{"body":"z"}"#)
            #expect(small.status == 200, "\(small.text)")
            #expect(await eventually { h.gateway.bodyBytesInFlight == 100 }, "the answered body was given back")
        }
    }

    @Test func aBodyLengthGivenTwoWaysIs400AndTheConnectionCloses() async throws {
        try await TestGateway.run(.inProcess) { h in
            let port = h.port
            let head = "POST /mutation/messages:send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            for lengths in [
                "Content-Length: 5\r\nTransfer-Encoding: chunked", "Content-Length: 5\r\nContent-Length: 14",
            ] {
                let (response, closed) = try await blocking {
                    let connection = try RawConnection(port: port)
                    try connection.send(
                        head + lengths + "\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    let response = try connection.readResponse()
                    return (response, connection.waitForClose())
                }
                #expect(response.status == 400, "\(lengths)")
                #expect(response.errorCode == "BadRequest", "\(response.text)")
                #expect(closed, "the rest is never read as another request")
            }
        }
    }

    @Test func unreachableUpstreamIs503WithRetryAfter() async throws {
        // A deployment URL whose port refuses connections (held by a socket that never listens).
        try await withRefusingPort { port in
            try await unreachable(url: "http://127.0.0.1:\(port)")
        }
    }

    private func unreachable(url: String) async throws {
        try await TestGateway.run(.inProcess, configure: { $0.connectTimeout = .milliseconds(500) }, deploymentURL: url)
        { h in
            let response = try await h.get("/query/messages:list")
            #expect(response.status == 503)
            #expect(response.header("Retry-After") != nil)
            #expect(response.errorCode == "UpstreamUnavailable")
            // Where the deployment is, and why it could not be reached, is the log's, not the caller's.
            let port = String(url.split(separator: ":").last ?? "")
            #expect(!response.text.contains("127.0.0.1") && !response.text.contains(port), "\(response.text)")
            #expect(!response.text.lowercased().contains("errno"), "\(response.text)")
            let mutation = try await h.post("/mutation/messages:send", json: #"{"body":"x"}"#)
            #expect(mutation.status == 503)
            let ready = try await h.get("/readyz")
            #expect(ready.status == 503)
        }
    }

    @Test func slowUpstreamIs504() async throws {
        try await TestGateway.run(.inProcess, configure: { $0.upstreamTimeout = .milliseconds(300) }) { h in
            let response = try await h.post("/action/conformance:sleep", json: #"{"ms":2000}"#)
            #expect(response.status == 504)
            #expect(response.errorCode == "UpstreamTimeout")
        }
    }

    @Test func connectionLimitIs503() async throws {
        // No idle timeout: on a loaded machine the third request can come more than the default 30 s after the held
        // connections' answers, which would have closed them and let it in.
        try await TestGateway.run(
            .inProcess,
            configure: {
                $0.maxConnections = 2
                $0.access.idleTimeoutSeconds = 0
                // Every connection of the test comes from one address: its share is above the limit here.
                $0.maxConnectionsPerClient = 100
            }
        ) { h in
            let port = h.port
            let held = try (0..<2).map { _ in try RawConnection(port: port) }
            defer { held.forEach { $0.close() } }
            // Each held connection must be accepted, and answered, before the third arrives.
            for connection in held {
                let answer = try await blocking {
                    try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    return try connection.readResponse()
                }
                #expect(answer.status == 200, "a held connection was refused: \(answer.text)")
            }
            let refused = try await h.get("/healthz")
            #expect(refused.status == 503)
            #expect(refused.errorCode == "Overloaded")
        }
    }
}
