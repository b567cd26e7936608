import Foundation
import TestSupport
import Testing

/// A live paginated feed in headless Chromium through client.js's `paginatedQuery`, against the real `convex-gateway`
/// binary. The page follows `feed:list` (newest first) in pages of 5 and, on the same stream, `feed:all` (every post):
/// client.js stores all values of a transition before any callback runs, so after each callback the feed's list must
/// be exactly `feed:all`'s posts from the first up to the list's last one (all of them once `Exhausted`): no gap, no
/// duplicate, no edit missing, no torn state. Meanwhile posts are inserted, deleted and edited in every page, page 1
/// grows until it splits, the gateway restarts (a new process on the same port, so nothing of the page's state is
/// left on the server side: pages hold their boundaries by their own cursors), and the feed's order changes, which
/// makes every cursor an `InvalidCursor` and starts the list over.
@Suite("Live paginated feeds in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserPaginationTests {
    struct Report: Decodable {
        /// Callbacks whose list was not the deployment's posts for its range, and why.
        var violations: [String]
        /// Errors passed to the feed's or `feed:all`'s error callback.
        var errors: [String]
        var callbacks: Int
        /// Callbacks whose list was compared with the deployment's (not while the first page loads).
        var checked: Int
        var statuses: [String]
        var results: Int
    }

    @Test(
        "a feed of three pages stays one gap-free list through inserts, deletes, edits, a split, a gateway restart and a reset"
    )
    func feedThroughEveryKindOfChange() async throws {
        try await BrowserPage.withRestartableGateway { restart, browser, origin in
            var opened: BrowserPage?
            try await restart { _ in
                let page = try await BrowserPage.open(browser, url: "\(origin)/healthz")
                opened = page
                let before = try await page.evaluate(Self.beforeRestart, as: Report.self, timeout: .seconds(60))
                Self.check(before, "before the restart")
                #expect(before.results == 24)
            }
            let page = try #require(opened)
            // A new gateway process on the same port: the page's streams reconnect to it.
            try await restart { _ in
                let after = try await page.evaluate(Self.afterRestart, as: Report.self, timeout: .seconds(60))
                Self.check(after, "after the restart")
                #expect(after.statuses.last == "CanLoadMore")
            }
        }
    }

    /// The README's `paginatedQuery` page, as printed but for the gateway's address, follows a live feed.
    @Test("the README's paginated feed example runs as printed")
    func readmeExample() async throws {
        let readme = try String(
            contentsOf: GatewayProcess.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "### A live feed, page by page"), "no such README section")
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "<script type=\"module\">\n"), "no module script in the section")
        let close = try #require(rest[open.upperBound...].range(of: "</script>"))
        let printed = String(rest[open.upperBound..<close.lowerBound])
        #expect(printed.contains("paginatedQuery(\"feed:list\""))
        try await TestGateway.run(.page) { gateway, _, page in
            let code = printed.replacingOccurrences(
                of: "http://127.0.0.1:8080", with: "http://127.0.0.1:\(gateway.port)")
            let code64 = Data(code.utf8).base64EncodedString()
            let text = try await page.evaluate(
                """
                (async () => {
                  const post = (body) => fetch("/mutation/feed:post", {
                    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ body }) });
                  for (const body of ["one", "two", "three"]) await post(body);
                  setInterval(changed, 50);
                  const script = document.createElement("script");
                  script.type = "module";
                  script.textContent = new TextDecoder().decode(Uint8Array.from(atob("\(code64)"), (c) => c.charCodeAt(0)));
                  document.head.appendChild(script);
                  await until(() => document.body.textContent === "Exhausted: three, two, one", "the first page shown");
                  await post("four");
                  await until(() => document.body.textContent === "Exhausted: four, three, two, one", "the new post shown");
                  return document.body.textContent;
                })()
                """, as: String.self)
            #expect(text == "Exhausted: four, three, two, one")
        }
    }

    /// A first reader's live first page grows with the feed; a second reader who comes later gets `initialNumItems`
    /// items, as convex-js's client does, not the first reader's grown page. Pages pinned at both ends are shared, and
    /// every page is pinned once it has loaded: two readers of one feed, a page and a half each, hold two upstream
    /// subscriptions (one per distinct page), not four.
    @Test("a second reader's first page holds initialNumItems while a first reader's page has grown")
    func aSecondReadersFirstPage() async throws {
        struct Readers: Decodable {
            var grown: [String]
            var second: [String]
            var secondStatus: String
            var upstream: Int
            /// Whether the count held for a second (else `upstream` is the last count read after 30 s).
            var settled: Bool
        }
        // Released subscriptions are not kept warm, so the upstream count is that of the pages read.
        try await TestGateway.run(.page, arguments: ["--keep-warm-seconds", "0.001"]) { _, _, page in
            let readers = try await page.evaluate(
                """
                (async () => {
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  const writer = new ConvexGateway(location.origin);
                  const post = (body, channel) => writer.mutation("feed:post", { body, channel });
                  const follow = (channel) => new ConvexGateway(location.origin)
                    .paginatedQuery("feed:list", { channel }, { initialNumItems: 3 }, () => changed());
                  // What a reader shows, for a wait that times out.
                  const shows = (reader) => `${reader.status} [${reader.results.map((post) => post.body).join(", ")}]`;
                  const upstream = async () => Number((await (await fetch("/metrics")).text())
                    .match(/^convex_gateway_upstream_active_subscriptions (\\d+)/m)?.[1]);
                  for (let i = 0; i < 4; i++) await post(`seed ${i}`, "grows");
                  const first = follow("grows");
                  await until(
                    () => first.status === "CanLoadMore" && first.results.length === 3,
                    () => `the first reader's page: ${shows(first)}`);
                  for (let i = 0; i < 5; i++) await post(`new ${i}`, "grows");
                  await until(
                    () => first.results.length === 8,
                    () => `the first reader's page grown by the new posts: ${shows(first)}`);
                  const second = follow("grows");
                  await until(
                    () => second.status !== "LoadingFirstPage",
                    () => `the second reader's first page: ${shows(second)}`);
                  const result = {
                    grown: first.results.map((post) => post.body),
                    second: second.results.map((post) => post.body),
                    secondStatus: second.status,
                  };
                  first.stop();
                  second.stop();

                  for (let i = 0; i < 4; i++) await post(`seed ${i}`, "shared");
                  const readers = [follow("shared"), follow("shared")];
                  await until(
                    () => readers.every((reader) => reader.status === "CanLoadMore"),
                    () => `two first pages: ${readers.map(shows).join("; ")}`);
                  for (const reader of readers) reader.loadMore(1);
                  await until(
                    () => readers.every((reader) => reader.results.length === 4),
                    () => `a page more each: ${readers.map(shows).join("; ")}`);
                  // Each page is replaced by its pinned page once that has a value, and the released pages leave
                  // within the sweeper's tick. Meanwhile the count passes through other values, 2 among them: with a
                  // keep-warm of a millisecond, a page a reader's stream still holds goes between the old stream's
                  // close and the new one's open (each swap reopens the stream), and comes back when the new one
                  // opens. So the count is polled (it has no event) until it has been 2 for a second, for at most
                  // 30 s (on a loaded machine the swaps take a while).
                  let count = await upstream();
                  let held = 0;
                  for (let tries = 0; tries < 300 && held < 10; tries++) {
                    await new Promise((resolve) => setTimeout(resolve, 100));
                    count = await upstream();
                    held = count === 2 ? held + 1 : 0;
                  }
                  return { ...result, upstream: count, settled: held >= 10 };
                })()
                """, as: Readers.self)
            #expect(readers.grown == ["new 4", "new 3", "new 2", "new 1", "new 0", "seed 3", "seed 2", "seed 1"])
            #expect(readers.second == ["new 4", "new 3", "new 2"])
            #expect(readers.secondStatus == "CanLoadMore")
            #expect(readers.upstream == 2 && readers.settled, "the upstream count: \(readers.upstream)")
        }
    }

    static func check(_ report: Report, _ phase: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(report.violations.isEmpty, "\(phase): \(report.violations.prefix(3))", sourceLocation: sourceLocation)
        #expect(report.errors.isEmpty, "\(phase): \(report.errors.prefix(3))", sourceLocation: sourceLocation)
        #expect(report.checked >= 3, "\(phase): \(report.checked) callbacks checked", sourceLocation: sourceLocation)
    }

    /// Sets up the page's feed and watches every callback; then three pages, changes in each, and a split of page 1.
    static let beforeRestart = """
        (async () => {
          // Every stream URL client.js opens, to count the pages it subscribes.
          window.streamURLs = [];
          const { ConvexGateway, EventStreamReader } = await import(`${location.origin}/client.js`);
          // A new stream is a change the page waits on (`until` checks again on changed()): after a split, the
          // stream with the final set of pages may open after the last callback, whose list is already complete.
          class RecordingReader extends EventStreamReader {
            constructor(url, options) { super(url, options); streamURLs.push(String(url)); changed(); }
          }
          window.feedPages = () => {
            const url = new URL(streamURLs.at(-1), location.origin);
            return [...url.searchParams.entries()].filter(([key, value]) => key.startsWith("sub.") && value === "feed:list").length;
          };
          const gateway = new ConvexGateway(location.origin, { eventStreamReader: RecordingReader });
          window.gateway = gateway;
          for (let i = 0; i < 30; i++) await gateway.mutation("feed:post", { body: `seed ${i}` });
          window.report = { violations: [], errors: [], callbacks: 0, checked: 0, statuses: [], results: 0 };
          const show = (posts) => posts.map((post) => post.body).join(",");
          const check = (results, status) => {
            report.callbacks += 1;
            report.statuses.push(status);
            report.results = results.length;
            const posts = gateway.current("feed:all", {});
            if (!posts || status === "LoadingFirstPage") return;
            report.checked += 1;
            const ids = results.map((post) => post._id);
            if (new Set(ids).size !== ids.length) report.violations.push(`duplicates: ${show(results)}`);
            const end = status === "Exhausted" ? posts.length : posts.findIndex((post) => post._id === ids.at(-1)) + 1;
            const expected = posts.slice(0, end);
            if (JSON.stringify(expected) !== JSON.stringify(results)) {
              report.violations.push(`${status}: list ${show(results)}; deployment ${show(expected)}`);
            }
          };
          gateway.subscribe("feed:all", {}, () => changed(), (error) => { report.errors.push(`feed:all ${error.message}`); });
          window.feed = gateway.paginatedQuery("feed:list", {}, { initialNumItems: 5 },
            (results, status) => { check(results, status); changed(); },
            (error) => { report.errors.push(`feed ${error.code} ${error.message}`); changed(); });
          const bodies = () => feed.results.map((post) => post.body);
          await until(() => feed.status === "CanLoadMore" && feed.results.length === 5, "the first page");
          feed.loadMore(5);
          await until(() => feed.status === "CanLoadMore" && feed.results.length === 10, "the second page");
          feed.loadMore(5);
          await until(() => feed.status === "CanLoadMore" && feed.results.length === 15, "the third page");

          // Changes in every page: three posts on top of page 1, a post deleted from pages 2 and 3, one edited in each.
          const held = feed.results;
          for (const body of ["new A", "new B", "new C"]) await gateway.mutation("feed:post", { body });
          await gateway.mutation("feed:remove", { id: held[7]._id });
          await gateway.mutation("feed:remove", { id: held[12]._id });
          for (const index of [2, 6, 11]) {
            await gateway.mutation("feed:edit", { id: held[index]._id, body: `edited ${index}` });
          }
          await until(() => {
            const now = bodies();
            return now.length === 16 && now[0] === "new C" && ["edited 2", "edited 6", "edited 11"].every((b) => now.includes(b))
              && !now.includes(held[7].body) && !now.includes(held[12].body);
          }, "every change in every page");

          // Page 1 grows past twice the page size (5 + 3 + 8 = 16 > 10): client.js splits it in two. A split may start
          // while the burst still comes (at 11 items): its newer half can then grow past 10 and split again, so page 1
          // ends as two pages or three.
          for (let i = 0; i < 8; i++) await gateway.mutation("feed:post", { body: `burst ${i}` });
          await until(() => feed.results.length === 24 && feedPages() >= 4, () => `page 1 split in two (${feed.status}, `
            + `${feed.results.length} results, ${feedPages()} pages on the last of ${streamURLs.length} streams, errors: `
            + `${report.errors.join("; ") || "none"})`);
          return report;
        })()
        """

    /// After the restart: changes reach the pages held by their cursors, one more page loads, and a changed order
    /// (every cursor invalid) starts the list over.
    static let afterRestart = """
        (async () => {
          const bodies = () => feed.results.map((post) => post.body);
          const start = report.callbacks, startChecked = report.checked;
          await gateway.mutation("feed:post", { body: "after restart" });
          const last = feed.results.at(-1);
          await gateway.mutation("feed:edit", { id: feed.results[12]._id, body: "edited after restart" });
          await gateway.mutation("feed:remove", { id: last._id });
          await until(() => {
            const now = bodies();
            return now[0] === "after restart" && now.includes("edited after restart") && !now.includes(last.body);
          }, "changes after the restart");
          const before = feed.results.length;
          feed.loadMore(5);
          await until(() => feed.status === "CanLoadMore" && feed.results.length === before + 5, "a page after the restart");

          await gateway.mutation("feed:setOrder", { order: "oldest" });
          await until(() => feed.status === "CanLoadMore" && feed.results[0]?.body === "seed 0" && feed.results.length === 5
            && feedPages() === 1, "the list started over in the new order");
          report.callbacks -= start;
          report.checked -= startChecked;
          return report;
        })()
        """
}
