import Foundation
import TestSupport
import Testing

/// client.js's connection state (`connectionState()`, `subscribeToConnectionState`) in headless Chromium while the
/// gateway under the page is stopped and started again on the same port: the page sees the stream go and come back,
/// and a mutation in flight meanwhile.
@Suite("Connection state in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserConnectionStateTests {
    struct Seen: Decodable {
        var isStreamConnected: Bool
        var hasEverConnected: Bool
        var connectionCount: Int
        var connectionRetries: Int
        var hasInflightRequests: Bool
        var inflightMutations: Int
    }

    @Test("the page sees its stream go when the gateway stops and come back when it starts again")
    func streamGoesAndComesBack() async throws {
        try await BrowserPage.withRestartableGateway { restart, browser, origin in
            var opened: BrowserPage?
            try await restart { _ in
                let page = try await BrowserPage.open(browser, url: "\(origin)/healthz")
                opened = page
                let open = try await page.evaluate(
                    """
                    (async () => {
                      const { ConvexGateway } = await import(`${location.origin}/client.js`);
                      window.gateway = new ConvexGateway(location.origin);
                      window.states = [];
                      gateway.subscribeToConnectionState((state) => { states.push(state); changed(); });
                      gateway.subscribe("conformance:counter", { name: "connection" }, () => changed());
                      await until(() => gateway.connectionState().isStreamConnected, "the stream open");
                      return gateway.connectionState();
                    })()
                    """, as: Seen.self)
                #expect(open.isStreamConnected && open.hasEverConnected)
                #expect(open.connectionCount == 1 && open.connectionRetries == 0)
            }
            let page = try #require(opened)
            // The gateway has stopped: the page's stream is gone, and it keeps trying.
            let down = try await page.evaluate(
                """
                (async () => {
                  await until(() => !gateway.connectionState().isStreamConnected
                    && gateway.connectionState().connectionRetries >= 1, "the stream gone");
                  // The state as the mutation starts (it fails soon after: nothing listens on the port).
                  let during;
                  window.sent = gateway.mutation("conformance:increment", { name: "connection" }).catch((error) => error.code);
                  await until(() => (during = gateway.connectionState()).inflightMutations === 1, "the mutation in flight");
                  return during;
                })()
                """, as: Seen.self)
            #expect(!down.isStreamConnected && down.hasEverConnected)
            #expect(down.hasInflightRequests && down.inflightMutations == 1)
            try await restart { _ in
                let back = try await page.evaluate(
                    """
                    (async () => {
                      await until(() => gateway.connectionState().isStreamConnected, "the stream back", 60000);
                      await sent;
                      await until(() => !gateway.connectionState().hasInflightRequests, "the mutation settled");
                      return gateway.connectionState();
                    })()
                    """, as: Seen.self)
                // At least one more: a stream may also have opened while the first gateway drained.
                #expect(back.isStreamConnected && back.connectionCount >= 2 && back.connectionRetries == 0)
                #expect(!back.hasInflightRequests && back.inflightMutations == 0)
            }
        }
    }
}
