import Foundation
import Testing

/// A page on /client.js in headless Chromium, served through the balancer like any page: one anonymous client with
/// two live queries on its one stream (the rounds' counter and the busy writer's) and a live paginated feed, and a
/// signed-in client (a token, exchanged for stream tickets through the balancer) following `conformance:whoami`.
/// Every value each callback is given is recorded with the time it came (`Date.now()`), and every error.
struct ReplicaPage {
    let page: BrowserPage
    let name: String
    let busyName: String
    let channel: String

    /// What the page was shown, in order.
    struct Record: Decodable {
        struct Count: Decodable {
            var value: Int
            /// Milliseconds since 1970, when the callback ran.
            var at: Double
        }
        struct Feed: Decodable {
            var bodies: [String]
            var status: String
        }
        var counts: [Count]
        var busy: [Count]
        var feeds: [Feed]
        /// Each `conformance:whoami` value, as JSON.
        var identities: [String]
        /// Every error a callback was given, with when.
        var errors: [String]
        struct Connection: Decodable {
            var connected: Bool
            var retries: Int
            var at: Double
        }
        /// The anonymous client's stream: each change of its connection state.
        var connection: [Connection]
    }

    /// Opens the page on the balancer at `port` and starts its clients; returns once each has its first value.
    static func open(
        _ browser: DevToolsConnection, port: Int, name: String, busyName: String, channel: String
    ) async throws -> ReplicaPage {
        let page = try await BrowserPage.open(browser, url: "http://127.0.0.1:\(port)/healthz")
        _ = try await page.evaluate(
            """
            (async () => {
              const { ConvexGateway } = await import(`${location.origin}/client.js`);
              const record = window.record = { counts: [], busy: [], feeds: [], identities: [], errors: [], connection: [] };
              const fail = (what) => (error) => {
                record.errors.push(`${what}: ${error.status} ${error.code} ${error.message} at ${Date.now()}`);
                changed();
              };
              const anonymous = new ConvexGateway(location.origin);
              anonymous.subscribeToConnectionState((state) => record.connection.push(
                { connected: state.isStreamConnected, retries: state.connectionRetries, at: Date.now() }));
              anonymous.subscribe("conformance:counter", { name: "\(name)" },
                (value) => { record.counts.push({ value, at: Date.now() }); changed(); }, fail("counter"));
              anonymous.subscribe("conformance:counter", { name: "\(busyName)" },
                (value) => { record.busy.push({ value, at: Date.now() }); changed(); }, fail("busy counter"));
              window.feed = anonymous.paginatedQuery("feed:list", { channel: "\(channel)" }, { initialNumItems: 5 },
                (results, status) => { record.feeds.push({ bodies: results.map((post) => post.body), status }); changed(); },
                fail("feed"));
              // A writer that never pauses: three mutations called at once, then three more once they are answered,
              // on a client of its own, so some are always on their way when a replica goes.
              const writes = window.writes = { sent: 0, failures: [], stop: false, done: false };
              const writer = new ConvexGateway(location.origin);
              (async () => {
                while (!writes.stop) {
                  const calls = [0, 1, 2].map(() => {
                    const body = `p${writes.sent++}`;
                    return writer.mutation("messages:send", { body, channel: "\(channel)-writes" })
                      .catch((error) => { writes.failures.push(`${body}: ${error.status} ${error.code} ${error.message}`); });
                  });
                  await Promise.all(calls);
                  await new Promise((resolve) => setTimeout(resolve, 20));
                }
                writes.done = true;
                changed();
              })();
              const token = () => unsignedJWT({ sub: "page-user", exp: Math.floor(Date.now() / 1000) + 3600 });
              new ConvexGateway(location.origin, { token }).subscribe("conformance:whoami", {},
                (value) => { record.identities.push(JSON.stringify(value)); changed(); }, fail("whoami"));
              await until(() => record.counts.length > 0 && record.busy.length > 0 && record.identities.length > 0
                && feed.status !== "LoadingFirstPage", "the page's first values");
              return true;
            })()
            """)
        return ReplicaPage(page: page, name: name, busyName: busyName, channel: channel)
    }

    /// What the page's writer sent: `p0`, `p1`, … to the channel `<channel>-writes`, and the calls that failed.
    struct Writes: Decodable {
        var sent: Int
        var failures: [String]
    }

    /// Stops the page's writer and waits for every mutation it called to be answered.
    func stopWrites() async throws -> Writes {
        try await page.evaluate(
            """
            (async () => {
              writes.stop = true;
              await until(() => writes.done, () => `the writer's last mutations, ${writes.sent} sent`, 60000);
              return { sent: writes.sent, failures: writes.failures };
            })()
            """, as: Writes.self, timeout: .seconds(90))
    }

    /// When the page was last given a value of the busy writer's count.
    func lastBusyArrival() async throws -> Date? {
        let milliseconds = try await page.evaluate("record.busy.at(-1)?.at ?? 0", as: Double.self)
        return milliseconds > 0 ? Date(timeIntervalSince1970: milliseconds / 1000) : nil
    }

    /// Waits until the page shows `count` for the rounds' counter, `busy` for the busy writer's and `posts` items in
    /// the feed, then returns everything it showed.
    func record(untilCount count: Int, busy: Int, posts: Int) async throws -> Record {
        try await page.evaluate(
            """
            (async () => {
              const last = () => JSON.stringify({ counter: record.counts.at(-1), busy: record.busy.at(-1),
                feed: feed.results.length, errors: record.errors });
              await until(() => record.counts.at(-1)?.value === \(count) && record.busy.at(-1)?.value === \(busy)
                && feed.results.length === \(posts), () => `the page's last values: ${last()}`, 60000);
              return record;
            })()
            """, as: Record.self, timeout: .seconds(90))
    }

    /// The oracle for the page: every value it showed is one the deployment had, in the order it had them (counts
    /// never go back; each feed it showed is the newest posts of the final feed, never fewer than before), its last
    /// values are the deployment's, the signed-in client was never shown another identity, and no callback was
    /// given an error.
    static func check(_ record: Record, rounds: Int, busy: Int, feed: [String]) {
        let counts = record.counts.map(\.value)
        #expect(counts == counts.sorted() && counts.last == rounds, "the page's counts: \(counts)")
        let busyCounts = record.busy.map(\.value)
        #expect(
            busyCounts == busyCounts.sorted() && busyCounts.last == busy,
            "the page's busy counts went back or missed the last (\(busy)): \(busyCounts.suffix(20))")
        var shown = 0
        for state in record.feeds {
            #expect(
                Array(feed.suffix(state.bodies.count)) == state.bodies && state.bodies.count >= shown,
                "the page showed a feed the deployment never had: \(state.bodies) (the feed: \(feed))")
            shown = state.bodies.count
        }
        #expect(record.feeds.last?.bodies == feed, "the page's last feed: \(record.feeds.last?.bodies ?? [])")
        #expect(
            !record.identities.isEmpty && record.identities.allSatisfy { $0.contains("page-user") },
            "the signed-in client was shown another identity: \(record.identities)")
        #expect(record.errors.isEmpty, "the page's callbacks were given errors: \(record.errors)")
    }
}
