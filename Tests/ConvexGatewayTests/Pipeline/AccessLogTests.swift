import ConvexGateway
import Foundation
import TestSupport
import Testing

/// The access log of the real executable at `info`: a line per answered request with its fields, a line when a stream
/// ends, and no credential in any line of the log, however it was sent.
@Suite("Access log", .timeLimit(.minutes(5)))
struct AccessLogTests {
    static let apiKey = "access-log-api-key-4c1d"
    static let cookie = "convex_jwt"

    /// The `key=value` metadata of a text log line.
    static func fields(_ line: Substring) -> [String: String] {
        var fields: [String: String] = [:]
        for word in line.split(separator: " ") {
            guard let equals = word.firstIndex(of: "=") else { continue }
            fields[String(word[..<equals])] = String(word[word.index(after: equals)...])
        }
        return fields
    }

    static func lines(_ log: String, message: String) -> [[String: String]] {
        log.split(separator: "\n").filter { $0.hasSuffix(" \(message)") }.map(fields)
    }

    @Test("each kind of request has its line, a stream's end has one, and no credential reaches the log")
    func linesAndNoCredentials() async throws {
        let environment = [
            "LOG_LEVEL": "info", "GATEWAY_API_KEY": Self.apiKey, "GATEWAY_AUTH_COOKIE": Self.cookie,
        ]
        try await TestGateway.run(.process, environment: environment) { gateway in
            let key = ["X-API-Key": Self.apiKey]
            let headerToken = TokenExpiryTests.jwt(subject: "header-user", expiresIn: 3600)
            let cookieToken = TokenExpiryTests.jwt(subject: "cookie-user", expiresIn: 3600)
            let queryToken = TokenExpiryTests.jwt(subject: "query-user", expiresIn: 3600)
            let ticketToken = TokenExpiryTests.jwt(subject: "ticket-user", expiresIn: 3600)

            // Anonymous GETs (the second is the hot path's), a missing route, a wrong key.
            #expect(try await gateway.get("/query/echo:echo?x=1", headers: key).status == 200)
            #expect(try await gateway.get("/query/echo:echo?x=1", headers: key).status == 200)
            #expect(try await gateway.get("/no-such-route", headers: key).status == 404)
            #expect(try await gateway.get("/query/echo:echo?x=2", headers: ["X-API-Key": "wrong-key"]).status == 401)
            // Credentials every way: header, cookie, query string (key and token), ticket.
            let signedIn = try await gateway.get(
                "/query/conformance:whoami", headers: key.merging(["Authorization": "Bearer \(headerToken)"]) { $1 })
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let byCookie = try await gateway.get(
                "/query/conformance:whoami", headers: key.merging(["Cookie": "\(Self.cookie)=\(cookieToken)"]) { $1 })
            #expect(byCookie.status == 200, "\(byCookie.text)")
            _ = try await gateway.get("/query/echo:echo?apiKey=\(Self.apiKey)&token=\(queryToken)", headers: key)
            _ = try await gateway.get("/query/echo:echo?x=3", headers: ["Cookie": "X-API-Key=\(Self.apiKey)"])
            let minted = try await gateway.request(
                "POST", "/stream-tickets", headers: key.merging(["Authorization": "Bearer \(ticketToken)"]) { $1 })
            let ticket = try StreamTicketEndToEndTests.ticket(from: minted)
            let stream = try await gateway.openStream("/subscribe/conformance:whoami?ticket=\(ticket)", headers: key)
            #expect(try await StreamTicketEndToEndTests.firstIdentity(stream).contains("ticket-user"))
            stream.close()
            // Real time: the server notices the closed stream at its next write (the heartbeat, every 2 s).
            #expect(await eventually(timeout: .seconds(30)) { gateway.log.contains(" Stream ended") })

            let log = gateway.log
            let answered = Self.lines(log, message: "Request answered")
            let queries = answered.filter { $0["http.route"] == "/query/{function}" && $0["http.status"] == "200" }
            #expect(queries.count >= 4, "\(log)")
            for line in queries {
                #expect(line["http.method"] == "GET")
                #expect(line["convex.function"] != nil)
                #expect(Int(line["http.response.bytes"] ?? "") ?? 0 > 0)
                #expect(Double(line["duration.ms"] ?? "") != nil)
                #expect(line["request.id"]?.wholeMatch(of: /[0-9a-f]{16}/) != nil)
                #expect(line["caller"] == "anonymous" || line["caller"] == "signed-in")
            }
            #expect(queries.contains { $0["caller"] == "signed-in" && $0["convex.function"] == "conformance:whoami" })
            #expect(answered.contains { $0["http.route"] == "unmatched" && $0["http.status"] == "404" }, "\(log)")
            #expect(answered.contains { $0["http.status"] == "401" }, "\(log)")
            let streamStart = answered.first { $0["http.route"] == "/subscribe/{function}" }
            #expect(streamStart?["http.status"] == "200", "\(log)")
            let ended = Self.lines(log, message: "Stream ended")
            #expect(ended.count == 1, "\(log)")
            if let end = ended.first {
                #expect(end["request.id"] == streamStart?["request.id"])
                #expect(end["caller"] == "signed-in")
                #expect(end["convex.function"] == "conformance:whoami")
                #expect(Int(end["stream.events"] ?? "") ?? 0 >= 1)
                #expect(Double(end["stream.lifetime.ms"] ?? "") ?? 0 > 0)
            }

            for secret in [Self.apiKey, headerToken, cookieToken, queryToken, ticketToken, ticket] {
                #expect(!log.contains(secret), "a credential reached the log")
            }
            for token in [headerToken, cookieToken, queryToken, ticketToken] {
                let claims = String(token.split(separator: ".")[1])
                #expect(!log.contains(claims), "a token's claims reached the log")
            }
        }
    }

    @Test("--access-log off silences the lines")
    func off() async throws {
        let environment = ["LOG_LEVEL": "info", "GATEWAY_ACCESS_LOG": "off"]
        try await TestGateway.run(.process, environment: environment) { (gateway: GatewayProcess) async throws in
            let answered = try await gateway.get("/query/echo:echo?x=1")
            let missing = try await gateway.get("/no-such-route")
            #expect(answered.status == 200 && missing.status == 404)
            #expect(gateway.log.contains("Gateway listening"))
            #expect(!gateway.log.contains("Request answered"))
        }
    }
}

/// `--log-format json` on the real executable: every line of its log, access lines included, is one JSON object.
@Suite("JSON log", .timeLimit(.minutes(5)))
struct JSONLogEndToEndTests {
    @Test func everyLineParses() async throws {
        try await TestGateway.run(.process, environment: ["LOG_LEVEL": "info", "LOG_FORMAT": "json"]) { gateway in
            #expect(try await gateway.get("/query/echo:echo?x=1").status == 200)
            #expect(try await gateway.get("/no-such-route").status == 404)
            let lines = gateway.log.split(separator: "\n")
            #expect(lines.count >= 4)
            var messages: [String] = []
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["time"] is String && object?["level"] is String, "\(line)")
                messages.append(object?["message"] as? String ?? "")
            }
            #expect(messages.contains("Gateway listening"))
            #expect(messages.filter { $0 == "Request answered" }.count >= 2)
        }
    }
}
