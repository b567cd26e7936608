import Foundation
import Testing

/// client.js's one-shot calls in headless Chromium against the real `convex-gateway` binary: the page loads the
/// module from the gateway it talks to (same origin, no build step).
@Suite("client.js calls in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserCallTests {
    struct Calls: Decodable {
        var queried: Team
        var recorded: Team
        var added: Double
        var error: ErrorReport
        var tokensAsked: [Bool]
        var whoami: String
    }

    struct Team: Decodable {
        var name: String
        var wins: Double
    }

    struct ErrorReport: Decodable {
        var name: String
        var status: Int
        var code: String
        var data: String?
    }

    @Test("query, mutation and action resolve to plain JSON; failures reject with the gateway's error")
    func calls() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let result = try await page.evaluate(
                """
                (async () => {
                  const { ConvexGateway, ConvexGatewayError } = await import(`${location.origin}/client.js`);
                  // The first token has expired: the gateway refuses it, and the client asks for a fresh one.
                  const tokensAsked = [];
                  const gateway = new ConvexGateway(location.origin, {
                    token: async ({ forceRefresh }) => {
                      tokensAsked.push(forceRefresh);
                      const lifetime = forceRefresh ? 3600 : -60;
                      return unsignedJWT({ sub: "page-user", exp: Math.floor(Date.now() / 1000) + lifetime });
                    },
                  });
                  const before = await gateway.query("mlb:first_place_team", { division: "AL Central" });
                  const recorded = await gateway.mutation("mlb:record_win", { team: before.name });
                  const queried = await gateway.query("mlb:first_place_team", { division: "AL Central" });
                  const added = await gateway.action("conformance:add", { a: 2, b: 3 });
                  const whoami = await new ConvexGateway(location.origin, {
                    token: () => unsignedJWT({ sub: "page-user", exp: Math.floor(Date.now() / 1000) + 60 }),
                  }).query("conformance:whoami");
                  let error;
                  try {
                    await gateway.mutation("mlb:record_win", { team: "Nobody" });
                  } catch (caught) {
                    if (!(caught instanceof ConvexGatewayError)) throw caught;
                    error = { name: caught.name, status: caught.status, code: caught.code,
                              data: caught.data?.code };
                  }
                  if (recorded.wins !== before.wins + 1) throw new Error(`recorded ${JSON.stringify(recorded)}`);
                  return { queried, recorded, added, error, tokensAsked: tokensAsked.slice(0, 2),
                           whoami: whoami.identity.subject };
                })()
                """, as: Calls.self)
            #expect(result.queried.name == result.recorded.name)
            #expect(result.queried.wins == result.recorded.wins, "the query sees the mutation")
            #expect(result.added == 5)
            #expect(result.whoami == "page-user")
            #expect(result.tokensAsked == [false, true], "a refused token is asked again with forceRefresh")
            #expect(result.error.name == "ConvexGatewayError")
            #expect(result.error.code == "ConvexError")
            #expect(result.error.data == "UnknownTeam")
            #expect(result.error.status >= 400)
        }
    }
}
