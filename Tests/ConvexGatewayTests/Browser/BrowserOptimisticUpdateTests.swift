import Foundation
import TestSupport
import Testing

/// client.js's optimistic updates (`mutation(fn, args, { optimisticUpdate })`) in headless Chromium against the real
/// `convex-gateway` binary and its embedded deployment. The page records every state its callbacks are given, and the
/// checks run over all of them: an optimistic value shows in the same task as the call, and once shown it is in every
/// later state (the server's value replaces it, never the value from before the mutation, though the stream is slower
/// than the calls: ``slowStreams``); a failed mutation's value goes at once; an update whose mutation changes none of
/// the page's queries goes once the stream reaches the commit.
@Suite("Optimistic updates in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserOptimisticUpdateTests {
    struct Report: Decodable {
        /// Every list of message bodies the page's callback was given, in order.
        var states: [[String]]
        /// Bodies not shown right after their mutation was called.
        var notShownAtOnce: [String]
        /// The final list, the server's (no optimistic item left).
        var final: [String]
        /// The code a failed mutation rejected with, and the list shown right after it.
        var failure: String?
        var shownAfterFailure: [String]?
    }

    /// Page code that delays what the page's event streams read by 300 ms (each chunk as it came, in order), while calls
    /// are answered at once: as when the stream goes through a slower replica or proxy than the calls. A mutation's
    /// answer then comes well before the transition that holds its change, the order in which an update dropped at the
    /// answer would let the page show the list from before the mutation.
    static let slowStreams = """
        const nativeFetch = window.fetch.bind(window);
        window.fetch = async (url, init) => {
          const response = await nativeFetch(url, init);
          if (!new URL(url, location.href).pathname.startsWith("/subscribe") || !response.body) return response;
          const reader = response.body.getReader();
          const later = (step) => setTimeout(step, 300);
          const body = new ReadableStream({
            async start(controller) {
              try {
                for (;;) {
                  const { done, value } = await reader.read();
                  if (done) return later(() => controller.close());
                  later(() => controller.enqueue(value));
                }
              } catch (error) {
                later(() => controller.error(error));
              }
            },
            cancel(reason) { return reader.cancel(reason); },
          });
          return new Response(body, { status: response.status, headers: response.headers });
        };
        """

    /// The bodies in `states` that appeared and later were missing from a state.
    static func flickers(_ states: [[String]], of bodies: [String]) -> [String] {
        bodies.filter { body in
            guard let first = states.firstIndex(where: { $0.contains(body) }) else { return true }
            return states[first...].contains { !$0.contains(body) }
        }
    }

    @Test("messages sent with an optimistic update show at once and stay until the server's list holds them")
    func messagesShowAtOnceAndNeverFlicker() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  \(Self.slowStreams)
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  const gateway = new ConvexGateway(location.origin);
                  const args = { channel: "optimistic" };
                  const states = [];
                  gateway.subscribe("messages:list", args, (messages) => {
                    states.push(messages.map((message) => message.body));
                    changed();
                  });
                  await until(() => states.length > 0, "the first list");
                  const notShownAtOnce = [];
                  const sends = [];
                  for (let i = 1; i <= 6; i++) {
                    const body = `m${i}`;
                    sends.push(gateway.mutation("messages:send", { body, channel: "optimistic" }, {
                      optimisticUpdate: (store, sent) => {
                        const list = store.getQuery("messages:list", args);
                        // Idempotent: the server's list may hold the message before its answer comes.
                        if (list === undefined || list.some((message) => message.body === sent.body)) return;
                        store.setQuery("messages:list", args, [...list, { _id: `optimistic-${sent.body}`, body: sent.body }]);
                      },
                    }));
                    if (!states.at(-1).includes(body)) notShownAtOnce.push(body);
                    if (i % 2 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
                  }
                  await Promise.all(sends);
                  const serverOnly = () => {
                    const list = gateway.current("messages:list", args);
                    return list.length === 6 && list.every((message) => !message._id.startsWith("optimistic-"));
                  };
                  await until(serverOnly, () => JSON.stringify(gateway.current("messages:list", args)));
                  return { states, notShownAtOnce, final: gateway.current("messages:list", args).map((m) => m.body) };
                })()
                """, as: Report.self, timeout: .seconds(60))
            let bodies = (1...6).map { "m\($0)" }
            #expect(report.notShownAtOnce.isEmpty)
            // Sent without waiting for each other, the messages commit in any order.
            #expect(report.final.sorted() == bodies)
            #expect(Self.flickers(report.states, of: bodies).isEmpty, "states: \(report.states)")
            #expect(report.states.allSatisfy { Set($0).count == $0.count }, "a message shown twice: \(report.states)")
        }
    }

    @Test(
        "a failed mutation's update goes at once; an update whose mutation changes none of the page's queries goes once the stream reaches its commit"
    )
    func failuresRollBackAndUnrelatedMutationsSettle() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  const gateway = new ConvexGateway(location.origin);
                  const args = { channel: "calm" };
                  const states = [];
                  gateway.subscribe("messages:list", args, (messages) => {
                    states.push(messages.map((message) => message.body));
                    changed();
                  });
                  await until(() => states.length > 0, "the first list");
                  const pretend = (body) => (store) => {
                    const list = store.getQuery("messages:list", args);
                    if (list !== undefined) store.setQuery("messages:list", args, [...list, { _id: "optimistic", body }]);
                  };
                  // A mutation the deployment fails: its update is shown, then rolled back when the failure comes.
                  const failure = await gateway.mutation("conformance:plainError", {}, { optimisticUpdate: pretend("doomed") })
                    .then(() => "succeeded", (error) => error.code);
                  const afterFailure = states.at(-1);
                  // A mutation that writes another channel: no transition of this page's stream holds its commit, so
                  // the stream is opened again at it, and the pretended message goes.
                  await gateway.mutation("messages:send", { body: "elsewhere", channel: "busy" },
                    { optimisticUpdate: pretend("pretended") });
                  await until(() => !states.at(-1).includes("pretended"), () => JSON.stringify(states));
                  return { states, notShownAtOnce: [], final: states.at(-1), failure, shownAfterFailure: afterFailure };
                })()
                """, as: Report.self, timeout: .seconds(60))
            #expect(report.failure != nil && report.failure != "succeeded")
            #expect(report.states.first == [])
            #expect(report.states.contains(["doomed"]), "the failed mutation's update was shown: \(report.states)")
            #expect(report.shownAfterFailure == [], "rolled back when the failure came")
            #expect(report.states.contains(["pretended"]))
            #expect(report.final == [])
            #expect(report.states.count == 5, "each change shown once: \(report.states)")
        }
    }

    @Test("a post inserted at the top of a live paginated feed shows at once and stays until the server's page has it")
    func paginatedInsertAtTop() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  \(Self.slowStreams)
                  const { ConvexGateway, insertAtTop } = await import(`${location.origin}/client.js`);
                  const gateway = new ConvexGateway(location.origin);
                  const post = (body) => fetch("/mutation/feed:post", {
                    method: "POST", headers: { "Content-Type": "application/json" },
                    body: JSON.stringify({ body, channel: "optimistic" }) });
                  for (const body of ["p1", "p2", "p3", "p4"]) await post(body);
                  const states = [];
                  const feed = gateway.paginatedQuery("feed:list", { channel: "optimistic" }, { initialNumItems: 3 },
                    (posts) => { states.push(posts.map((p) => p.body)); changed(); });
                  await until(() => states.length > 0 && feed.status === "CanLoadMore", "the first page");
                  const notShownAtOnce = [];
                  const sends = [];
                  for (const body of ["n1", "n2"]) {
                    sends.push(gateway.mutation("feed:post", { body, channel: "optimistic" }, {
                      optimisticUpdate: (localQueryStore, sent) => insertAtTop({
                        paginatedQuery: "feed:list", argsToMatch: { channel: "optimistic" }, localQueryStore,
                        item: { _id: `optimistic-${sent.body}`, body: sent.body },
                      }),
                    }));
                    if (states.at(-1)[0] !== body) notShownAtOnce.push(body);
                  }
                  await Promise.all(sends);
                  await until(() => feed.results.length === 5 && feed.results.every((p) => !p._id.startsWith("optimistic-")),
                    () => JSON.stringify(feed.results));
                  return { states, notShownAtOnce, final: feed.results.map((p) => p.body) };
                })()
                """, as: Report.self, timeout: .seconds(60))
            #expect(report.notShownAtOnce.isEmpty)
            #expect(report.states.first == ["p4", "p3", "p2"])
            #expect(Set(report.final.prefix(2)) == ["n1", "n2"] && report.final.dropFirst(2) == ["p4", "p3", "p2"])
            #expect(Self.flickers(report.states, of: ["n1", "n2"]).isEmpty, "states: \(report.states)")
        }
    }
}
