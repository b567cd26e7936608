import Foundation
import Testing

/// Signed-in pages in headless Chromium against the real `convex-gateway` binary: the auth cookie, stream tickets
/// (an EventSource cannot send `Authorization`), tickets across replicas, and client.js through a token's expiry.
/// Tokens are unsigned JWTs, which the embedded deployment accepts in its development mode (checking `exp`).
@Suite("Signed-in pages in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserAuthTests {
    /// Page code: `whoami(url)` opens an EventSource on `url` (a `conformance:whoami` stream) and resolves to the
    /// subject it sees (null when anonymous); a refused stream rejects.
    static let whoamiScript = """
        const whoami = (url) => new Promise((resolve, reject) => {
          const source = new EventSource(url);
          source.addEventListener("transition", (event) => {
            source.close();
            resolve(JSON.parse(event.data).changes[0].value.identity?.subject ?? null);
          });
          source.addEventListener("fatal", (event) => {
            source.close();
            reject(new Error(`stream failed: ${event.data}`));
          });
          source.addEventListener("error", () => {
            if (source.readyState === EventSource.CLOSED) reject(new Error("stream refused"));
          });
        });
        const stream = "/subscribe?sub.me=conformance:whoami";
        const jwtFor = (subject, seconds = 600, claims = {}) =>
          unsignedJWT({ sub: subject, exp: Math.floor(Date.now() / 1000) + seconds, ...claims });
        const mintTicket = async (jwt) => {
          const response = await fetch("/stream-tickets", { method: "POST", headers: { Authorization: `Bearer ${jwt}` } });
          if (response.status !== 201) throw new Error(`POST /stream-tickets answered ${response.status}`);
          return response.json();
        };
        """

    struct Identities: Decodable {
        var anonymousBefore: String?
        var viaCookie: String?
        var viaTicket: String?
        var viaClient: String?
        var ticketLifetime: Double
        var tamperedStatus: Int
    }

    @Test("two users' pages, in separate browser contexts, each see their own identity by cookie, ticket and client.js")
    func cookieAndTicketPerUser() async throws {
        try await TestGateway.run(.page, arguments: ["--auth-cookie", "session"]) { gateway, browser, first in
            let second = try await BrowserPage.open(
                browser, url: "http://127.0.0.1:\(gateway.port)/healthz",
                context: try await BrowserPage.newContext(browser))
            func identities(of user: String, on page: BrowserPage) async throws -> Identities {
                try await page.evaluate(
                    """
                    (async () => {
                      \(Self.whoamiScript)
                      const anonymousBefore = await whoami(stream);
                      const jwt = jwtFor("\(user)");
                      document.cookie = `session=${jwt}; path=/; SameSite=Strict`;
                      const viaCookie = await whoami(stream);
                      document.cookie = "session=; path=/; max-age=0";
                      const minted = await mintTicket(jwt);
                      const viaTicket = await whoami(`${stream}&ticket=${encodeURIComponent(minted.ticket)}`);
                      const middle = minted.ticket.length >> 1;
                      const tampered = minted.ticket.slice(0, middle) + (minted.ticket[middle] === "A" ? "B" : "A")
                        + minted.ticket.slice(middle + 1);
                      const refused = await fetch(`${stream}&ticket=${encodeURIComponent(tampered)}`);
                      const { ConvexGateway } = await import(`${location.origin}/client.js`);
                      const gateway = new ConvexGateway(location.origin, { token: () => jwt });
                      const viaClient = await new Promise((resolve, reject) => {
                        const stop = gateway.subscribe("conformance:whoami", {}, (value) => {
                          stop();
                          resolve(value.identity?.subject ?? null);
                        }, reject);
                      });
                      gateway.close();
                      return { anonymousBefore, viaCookie, viaTicket, viaClient,
                               ticketLifetime: minted.expiresAt - Date.now(), tamperedStatus: refused.status };
                    })()
                    """, as: Identities.self)
            }
            // Cookies first in both contexts, so each page reads its own while the other's is set.
            async let ann = identities(of: "ann", on: first)
            async let bob = identities(of: "bob", on: second)
            for (user, seen) in try await [("ann", ann), ("bob", bob)] {
                #expect(seen.anonymousBefore == nil, "\(user): no cookie yet, so anonymous")
                #expect(seen.viaCookie == user)
                #expect(seen.viaTicket == user)
                #expect(seen.viaClient == user)
                #expect(seen.ticketLifetime > 0)
                #expect(seen.tamperedStatus == 401)
            }
        }
    }

    @Test("a ticket minted by one gateway process opens a stream on another that shares the key file")
    func ticketAcrossProcesses() async throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("ticket-key-\(UUID())")
        let key = (0..<48).map { _ in UInt8.random(in: 0...255) }
        try Data(Data(key).base64EncodedString().utf8).write(to: keyFile)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let shared = ["GATEWAY_TICKET_KEY_FILE": keyFile.path]
        try await TestGateway.run(.process, environment: shared) { other in
            try await TestGateway.run(.page, environment: shared) { gateway, _, page in
                struct Minted: Decodable { var ticket: String }
                let minted = try await page.evaluate(
                    "(async () => { \(Self.whoamiScript) return mintTicket(jwtFor(\"cal\")); })()", as: Minted.self)
                try await page.navigate(to: "http://127.0.0.1:\(other.port)/healthz")
                let subject = try await page.evaluate(
                    """
                    (async () => {
                      \(Self.whoamiScript)
                      return whoami(`${stream}&ticket=${encodeURIComponent(\(Self.jsString(minted.ticket)))}`);
                    })()
                    """, as: String.self)
                #expect(subject == "cal", "minted on port \(gateway.port), opened on port \(other.port)")
            }
        }
    }

    struct Expiry: Decodable {
        var sessions: [Double]
        var tokensAsked: [Bool]
        var errors: [String]
    }

    @Test("when the token behind client.js's stream expires, it mints a ticket from a fresh token and carries on")
    func recoversFromExpiry() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  \(Self.whoamiScript)
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  // Tokens live 2 to 3 s; each carries its number, which whoami shows.
                  const tokensAsked = [];
                  const gateway = new ConvexGateway(location.origin, {
                    token: ({ forceRefresh }) => {
                      tokensAsked.push(forceRefresh);
                      return jwtFor("dee", 3, { session: tokensAsked.length });
                    },
                  });
                  const sessions = [], errors = [];
                  gateway.subscribe("conformance:whoami", {}, (value) => { sessions.push(value.identity.session); changed(); },
                    (error) => { errors.push(error.code); changed(); });
                  await until(() => sessions.length >= 2, "a value under a second token", 40000);
                  gateway.close();
                  return { sessions, tokensAsked, errors };
                })()
                """, as: Expiry.self)
            #expect(report.sessions.count >= 2)
            #expect(report.sessions == report.sessions.sorted(), "\(report.sessions)")
            #expect(report.tokensAsked.contains(true), "a fresh token was asked for: \(report.tokensAsked)")
            #expect(report.errors.isEmpty, "the expiry is handled without troubling the subscription")
        }
    }

    /// `text` as a JavaScript string literal.
    static func jsString(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed]), as: UTF8.self)
    }
}
