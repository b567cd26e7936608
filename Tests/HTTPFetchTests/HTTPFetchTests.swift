import HTTPFetch
import NIOHTTP1
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(5)))
struct HTTPFetchTests {
    @Test func getSendsHostAndHeadersAndReadsAChunkedAnswer() async throws {
        try await withLoopbackServer({ request in
            let headers = request.head.headers
            let echo =
                "\(request.head.method) \(request.head.uri) host=\(headers.first(name: "Host") ?? "")"
                + " accept=\(headers.first(name: "Accept") ?? "")"
            // No Content-Length: the server sends the body chunked.
            return (.ok, [("Content-Type", "text/plain")], Array(echo.utf8))
        }) { port in
            let response = try await fetch(
                .GET, "http://127.0.0.1:\(port)/a/b%20c?x=1&y=%2F", headers: [("Accept", "application/json")])
            #expect(response.status == 200)
            #expect(response.header("content-type") == "text/plain")
            #expect(
                String(decoding: response.body, as: UTF8.self)
                    == "GET /a/b%20c?x=1&y=%2F host=127.0.0.1:\(port) accept=application/json")
        }
    }

    @Test func postSendsItsBodyAndReadsAnErrorStatus() async throws {
        try await withLoopbackServer({ request in
            (.unauthorized, [("Content-Length", String(request.body.count))], request.body.reversed())
        }) { port in
            let response = try await fetch(.POST, "http://127.0.0.1:\(port)/", body: Array("abc".utf8))
            #expect(response.status == 401)
            #expect(response.reasonPhrase == "Unauthorized")
            #expect(response.body == Array("cba".utf8))
        }
    }

    @Test func redirectsAreFollowedAndA303TurnsAPostIntoAGet() async throws {
        try await withLoopbackServer({ request in
            switch request.head.uri {
            case "/moved": (.temporaryRedirect, [("Location", "/seeOther")], [])
            case "/seeOther": (.seeOther, [("Location", "/final?q=1")], [])
            default: (.ok, [], Array("\(request.head.method) \(request.head.uri) \(request.body.count)".utf8))
            }
        }) { port in
            let response = try await fetch(.POST, "http://127.0.0.1:\(port)/moved", body: Array("{}".utf8))
            #expect(String(decoding: response.body, as: UTF8.self) == "GET /final?q=1 0")
        }
    }

    @Test func aRedirectLoopEnds() async throws {
        try await withLoopbackServer({ _ in (.found, [("Location", "/again")], []) }) { port in
            let error = await #expect(throws: HTTPFetchError.self) {
                try await fetch(.GET, "http://127.0.0.1:\(port)/again")
            }
            #expect(error?.description.contains("too many redirects") == true, "\(String(describing: error))")
        }
    }

    @Test func aBodyOverTheLimitIsRefused() async throws {
        try await withLoopbackServer({ _ in (.ok, [], [UInt8](repeating: 65, count: 10_000)) }) { port in
            let error = await #expect(throws: HTTPFetchError.self) {
                try await fetch(.GET, "http://127.0.0.1:\(port)/", maxBodyBytes: 9_999)
            }
            #expect(error?.description.contains("larger than 9999 bytes") == true)
            let response = try await fetch(.GET, "http://127.0.0.1:\(port)/", maxBodyBytes: 10_000)
            #expect(response.body.count == 10_000)
        }
    }

    @Test func aSilentServerTimesOut() async throws {
        try await withLoopbackServer({ _ in nil }) { port in
            // Real time: HTTPFetch's timeout is a real network deadline; the check is a generous upper bound (a fetch
            // that ignored its timeout would wait for the test's time limit), not a figure: on half a core the whole
            // suite can hold the test process for seconds.
            let clock = ContinuousClock()
            let start = clock.now
            let error = await #expect(throws: HTTPFetchError.self) {
                try await fetch(.GET, "http://127.0.0.1:\(port)/", timeout: .milliseconds(300))
            }
            #expect(error?.description == "127.0.0.1 did not answer within 0.3 seconds")
            #expect(clock.now - start < .seconds(60))
        }
    }

    @Test func aRefusedConnectionAndABadURLAreErrors() async throws {
        // A port held by a socket that never listens: refused, and no other server of the run can take it.
        let refused = try await withRefusingPort { port in
            await #expect(throws: HTTPFetchError.self) { try await fetch(.GET, "http://127.0.0.1:\(port)/") }
        }
        #expect(refused?.description.hasPrefix("the request to 127.0.0.1 failed") == true)
        for url in ["ftp://example.com/", "/relative", "not a url"] {
            let error = await #expect(throws: HTTPFetchError.self) { try await fetch(.GET, url) }
            #expect(error?.description.contains("is not an absolute http or https URL") == true)
        }
    }
}
