import Foundation
import TestSupport
import Testing

@testable import MicroHTTPD

/// The bound on request bodies held at once (``BodyBudget``): the accounting alone, then through a server.
@Suite("Request bodies in flight", .serialized, .timeLimit(.minutes(5)))
struct BodyBudgetTests {
    /// `budget.take(bytes)` outside `#expect`, which cannot call a mutating method.
    func take(_ bytes: Int, from budget: inout BodyBudget) -> Bool {
        budget.take(bytes) == .fits
    }

    /// Runs a blocking step of the test through a server; its failure names the step, so that a read that gives up
    /// says which answer never came.
    func step<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await blocking(body)
        } catch {
            throw TestFailure("\(name): \(error)")
        }
    }

    @Test("a declared body starts when it fits; bytes are taken as they come and given back")
    func accounting() {
        var budget = BodyBudget(limit: 100)
        #expect(budget.admits(declared: 100) == .fits)
        #expect(budget.admits(declared: 101) == .overBound)
        #expect(take(60, from: &budget))
        // Admission sets nothing aside: only the bytes taken count.
        #expect(budget.admits(declared: 40) == .fits)
        #expect(budget.admits(declared: 41) == .overBound)
        #expect(take(40, from: &budget))
        #expect(!take(1, from: &budget), "full")
        #expect(budget.inFlight == 100)
        #expect(budget.admits(declared: 1) == .overBound)
        // A refused take takes nothing.
        budget.release(40)
        #expect(!take(41, from: &budget))
        #expect(budget.inFlight == 60)
        #expect(take(40, from: &budget))
        budget.release(100)
        #expect(budget.inFlight == 0)
        #expect(budget.admits(declared: 100) == .fits)
        // An empty body never counts.
        #expect(take(0, from: &budget))
        #expect(budget.inFlight == 0)
    }

    @Test("without a bound every body fits, and the bytes are still counted")
    func noBound() {
        var budget = BodyBudget(limit: nil)
        #expect(budget.admits(declared: Int.max) == .fits)
        #expect(take(1 << 40, from: &budget))
        #expect(budget.inFlight == 1 << 40)
        budget.release(1 << 40)
        #expect(budget.inFlight == 0)
    }

    @Test("bodies past the bound get 503 before they are read; what they held comes back when their requests end")
    func throughAServer() async throws {
        // The handler keeps each request unanswered, so its body stays in flight until the test answers it. Each is
        // kept under its path: the two worker threads run the first two handlers in either order.
        let held = Box<[String: HTTPResponder]>([:])
        let handler: HTTPHandler = { request, responder in held.update { $0[request.path] = responder } }
        let configuration = testConfiguration {
            $0.maxBodySize = 1000
            $0.maxBodyBytesInFlight = 2000
        }
        let body = String(repeating: "a", count: 1000)
        try await withHTTPServer(configuration: configuration, logger: quietLogger, handler: handler) { server in
            let port = try #require(server.port)
            let first = try RawConnection(port: port)
            let second = try RawConnection(port: port)
            for (connection, path) in [(first, "/first"), (second, "/second")] {
                try await step("sending one of the first two bodies") {
                    try connection.send("POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n\(body)")
                }
            }
            #expect(await eventually { held.value.count == 2 })
            #expect(server.bodyBytesInFlight == 2000)

            // A third: refused from its head alone, before its body is sent, and its connection closed.
            let (refused, closed) = try await step("the third body's 503") {
                let connection = try RawConnection(port: port)
                try connection.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
                let response = try connection.readResponse()
                return (response, connection.waitForClose())
            }
            #expect(refused.status == 503)
            #expect(refused.header("Connection")?.lowercased() == "close")
            #expect(closed)
            // A chunked one (no length declared): read to its end, discarded, refused the same.
            let chunked = try await step("the chunked body's 503") {
                let connection = try RawConnection(port: port)
                try connection.send("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                try connection.send("a\r\n0123456789\r\n0\r\n\r\n")
                return try connection.readResponse()
            }
            #expect(chunked.status == 503)
            #expect(held.value.count == 2, "neither reached the handler")
            #expect(server.bodyBytesInFlight == 2000)

            // An answered request gives its bytes back; so does one whose client leaves.
            #expect(try #require(held.value["/first"]).respond(HTTPResponse(body: "ok")))
            _ = try await step("the first body's answer") { try first.readResponse() }
            #expect(await eventually { server.bodyBytesInFlight == 1000 })
            second.close()
            #expect(await eventually { server.bodyBytesInFlight == 0 })

            // And a client that leaves halfway through its body gives back what it had sent.
            let halfway = try RawConnection(port: port)
            try await step("sending half a body") {
                try halfway.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n\(body.prefix(400))")
            }
            #expect(await eventually { server.bodyBytesInFlight == 400 })
            halfway.close()
            #expect(await eventually { server.bodyBytesInFlight == 0 })

            // Room again: the next body reaches the handler.
            let again = try RawConnection(port: port)
            try await step("sending a body once there is room") {
                try again.send("POST /again HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n\(body)")
            }
            #expect(await eventually { held.value.count == 3 })
            #expect(try #require(held.value["/again"]).respond(HTTPResponse(body: "ok")))
            #expect(try await step("the last body's answer") { try again.readResponse() }.status == 200)
            #expect(await eventually { server.bodyBytesInFlight == 0 })
        }
    }
}
