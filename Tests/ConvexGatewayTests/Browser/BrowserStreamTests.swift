import Foundation
import Testing

/// Live queries in headless Chromium against the real `convex-gateway` binary. A browser opens at most six HTTP/1.1
/// connections per origin: a page that held one EventSource per live query stalled past six, its `fetch` calls
/// included. On one multi-subscription stream a page holds twenty and still gets every mutation answered.
@Suite("Live queries in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserStreamTests {
    static let count = 20

    struct Report: Decodable {
        /// Each mutation's answer, in order.
        var mutations: [Double]
        /// Every value each subscription delivered, by subscription.
        var values: [String: [Double]]
        var errors: [String]
        /// Event streams the gateway had open while the page held its live queries.
        var openStreams: Double
    }

    /// Reads the gateway's count of open event streams from `/metrics`, in the page.
    static let openStreamsScript = """
        const openStreams = async () => {
          const metrics = await (await fetch("/metrics")).text();
          const line = metrics.split("\\n").find((line) => line.startsWith("convex_gateway_sse_active"));
          return Number(line?.split(" ").at(-1));
        };
        """

    @Test("a plain EventSource on /subscribe?sub.<id>=… holds 20 live queries while 20 mutations are answered")
    func plainEventSource() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  \(Self.openStreamsScript)
                  const ids = Array.from({ length: \(Self.count) }, (_, i) => `c${i}`);
                  const params = new URLSearchParams();
                  for (const id of ids) {
                    params.append(`sub.${id}`, "conformance:counter");
                    params.append(`args.${id}`, JSON.stringify({ name: `plain-${id}` }));
                  }
                  const values = {}, errors = [];
                  const source = new EventSource(`/subscribe?${params}`);
                  source.addEventListener("transition", (event) => {
                    for (const { sub, value } of JSON.parse(event.data).changes) (values[sub] ??= []).push(value);
                    changed();
                  });
                  source.addEventListener("fatal", (event) => errors.push(event.data));
                  const reached = (n) => ids.every((id) => values[id]?.at(-1) === n);
                  await until(() => reached(0), "the first value of every subscription");
                  // All at once: they need connections besides the stream's.
                  const mutations = await Promise.all(ids.map(async (id) => {
                    const response = await fetch("/mutation/conformance:increment", {
                      method: "POST", headers: { "Content-Type": "application/json" },
                      body: JSON.stringify({ name: `plain-${id}` }),
                    });
                    return response.json();
                  }));
                  await until(() => reached(1), "every subscription's update");
                  const report = { mutations, values, errors, openStreams: await openStreams() };
                  source.close();
                  return report;
                })()
                """, as: Report.self)
            #expect(report.mutations == Array(repeating: 1, count: Self.count))
            #expect(report.values.count == Self.count)
            for (id, values) in report.values {
                #expect(values == [0, 1], "\(id)")
            }
            #expect(report.errors.isEmpty)
            #expect(report.openStreams == 1)
        }
    }

    struct ClientReport: Decodable {
        var mutations: [Double]
        var values: [String: [Double]]
        /// Deliveries to the first twenty after a twenty-first subscription re-opened the stream.
        var deliveriesAfterReopen: Int
        var added: [Double]
        var unknown: String
        var afterUnknown: [Double]
        var stoppedDeliveries: Int
        var openStreams: Double
    }

    /// A changed set re-opens the stream without repeating unchanged values; an unknown function's error goes to its
    /// subscription alone; a stopped subscription hears nothing more.
    @Test("client.js holds 20 live queries on one shared stream while 20 mutations are answered")
    func clientScript() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  \(Self.openStreamsScript)
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  const gateway = new ConvexGateway(location.origin);
                  const ids = Array.from({ length: \(Self.count) }, (_, i) => `c${i}`);
                  const values = {}, errors = {};
                  const follow = (id, fn = "conformance:counter") => gateway.subscribe(fn, { name: `client-${id}` },
                    (value) => { (values[id] ??= []).push(value); changed(); },
                    (error) => { errors[id] = error.code; changed(); });
                  const stops = ids.map((id) => follow(id));
                  const last = (id) => values[id]?.at(-1);
                  const reached = (n) => ids.every((id) => last(id) === n);
                  await until(() => reached(0), "the first value of every subscription");
                  const mutations = await Promise.all(ids.map((id) =>
                    gateway.mutation("conformance:increment", { name: `client-${id}` })));
                  await until(() => reached(1), "every subscription's update");
                  const openStreamsNow = await openStreams();

                  // A new subscription re-opens the stream; the twenty unchanged values are not delivered again.
                  const delivered = () => ids.reduce((sum, id) => sum + values[id].length, 0);
                  const before = delivered();
                  follow("extra");
                  await until(() => last("extra") === 0, "the new subscription's value");
                  await gateway.mutation("conformance:increment", { name: "client-extra" });
                  await until(() => last("extra") === 1, "the new subscription's update");
                  const deliveriesAfterReopen = delivered() - before;

                  // An unknown function: its subscription alone gets the error; the others carry on.
                  follow("unknown", "conformance:noSuchQuery");
                  await until(() => errors.unknown, "the unknown function's error");
                  await gateway.mutation("conformance:increment", { name: "client-c0" });
                  await until(() => last("c0") === 2, "an update after the unknown function");

                  // A stopped subscription hears nothing more, whether its update comes on the old stream or
                  // the re-opened one: c2's increment comes before c3's on either.
                  stops[2]();
                  const stoppedBefore = values.c2.length;
                  await gateway.mutation("conformance:increment", { name: "client-c2" });
                  await gateway.mutation("conformance:increment", { name: "client-c3" });
                  await until(() => last("c3") === 2, "c3's update");
                  gateway.close();
                  return { mutations, values, deliveriesAfterReopen, added: values.extra, unknown: errors.unknown,
                           afterUnknown: values.c0, stoppedDeliveries: values.c2.length - stoppedBefore,
                           openStreams: openStreamsNow };
                })()
                """, as: ClientReport.self)
            #expect(report.mutations == Array(repeating: 1, count: Self.count))
            #expect(report.openStreams == 1, "one stream for every subscription of the page")
            #expect(report.values["c5"] == [0, 1])
            #expect(report.deliveriesAfterReopen == 0, "unchanged values are not delivered again")
            #expect(report.added == [0, 1])
            #expect(report.unknown == "FunctionNotFound")
            #expect(report.afterUnknown == [0, 1, 2])
            #expect(report.stoppedDeliveries == 0)
        }
    }

    struct PatchReport: Decodable {
        /// After each change, whether the subscription's value equals a fresh `query` of the list.
        var matched: [Bool]
        var patchEvents: Double
        var streamsOpened: Double
        var dropped: Double
        var recovered: Bool
        /// The first value delivered is untouched by the patches that followed (they apply to copies).
        var firstUntouched: Bool
    }

    /// A list of documents that changes one document at a time arrives as patches, applied to copies; a lost patch
    /// (dropped by a wrapped stream reader) makes the next one miss its base, and client.js starts over with full values.
    @Test("client.js applies JSON Patches and recovers from a lost one with a fresh stream")
    func clientScriptPatches() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  const { ConvexGateway, EventStreamReader } = await import(`${location.origin}/client.js`);
                  let opened = 0, patches = 0, dropped = 0, dropNext = false;
                  class CountingReader extends EventStreamReader {
                    constructor(...args) { super(...args); opened += 1; }
                    addEventListener(type, listener, options) {
                      if (type !== "transition") return super.addEventListener(type, listener, options);
                      return super.addEventListener(type, (event) => {
                        if (!JSON.parse(event.data).changes.some((change) => change.ops)) return listener(event);
                        patches += 1;
                        if (dropNext) { dropNext = false; dropped += 1; return; }
                        listener(event);
                      }, options);
                    }
                  }
                  const gateway = new ConvexGateway(location.origin, { eventStreamReader: CountingReader });
                  const ids = [];
                  for (let i = 0; i < 30; i++) ids.push(await gateway.mutation("items:add", { text: `item ${i}` }));
                  const seen = [];
                  gateway.subscribe("items:list", {}, (value) => { seen.push(value); changed(); });
                  await until(() => seen.at(-1)?.length === 30, "the first value");
                  const same = async () =>
                    JSON.stringify(seen.at(-1)) === JSON.stringify(await gateway.query("items:list", {}));
                  const matched = [];
                  for (const change of [
                    () => gateway.mutation("items:add", { text: "newest" }),
                    () => gateway.mutation("items:update", { id: ids[10], text: "edited" }),
                    () => gateway.mutation("items:remove", { id: ids[5] }),
                  ]) {
                    const before = seen.length;
                    await change();
                    await until(() => seen.length > before, "a change");
                    matched.push(await same());
                  }
                  const patchEvents = patches;
                  dropNext = true;
                  await gateway.mutation("items:add", { text: "lost" });
                  await gateway.mutation("items:add", { text: "after the lost one" });
                  await until(() => seen.at(-1)?.[0]?.text === "after the lost one", "the value after a lost patch");
                  matched.push(await same());
                  gateway.close();
                  return { matched, patchEvents, streamsOpened: opened, dropped,
                           recovered: seen.at(-1)[1].text === "lost",
                           firstUntouched: seen[0].length === 30 && seen[0][0].text === "item 29" };
                })()
                """, as: PatchReport.self)
            #expect(report.matched == [true, true, true, true])
            #expect(report.patchEvents == 3, "each of the three changes came as a patch")
            #expect(report.dropped == 1)
            #expect(report.streamsOpened == 2, "a fresh stream after the patch that missed its base")
            #expect(report.recovered)
            #expect(report.firstUntouched)
        }
    }

    struct ConsistencyReport: Decodable {
        var callbacks: Int
        var torn: [String]
        var firstWins: Double
        var lastWins: Double
        var listWins: Double
    }

    /// The measurement of issue 18: two live queries one mutation changes together, and a page that compares them
    /// whenever either callback runs. On per-subscription events one query lagged after every mutation.
    @Test("client.js: two live queries that one mutation changes together are never seen torn, over 40 mutations")
    func clientScriptSnapshotConsistency() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  const gw = new ConvexGateway(location.origin);
                  const division = { division: "AL Central" };
                  let callbacks = 0;
                  const torn = [];
                  const wins = [];
                  // Whenever any callback runs, what the page holds: the leader's wins against its row in the list.
                  const compare = (from) => {
                    callbacks += 1;
                    const leader = gw.current("mlb:first_place_team", division);
                    const teams = gw.current("mlb:teams", division);
                    if (!leader || !teams) return;
                    const row = teams.find((team) => team.name === leader.name);
                    if (row?.wins !== leader.wins) torn.push(`${from}: leader ${leader.wins}, list ${row?.wins}`);
                    wins.push(leader.wins);
                    changed();
                  };
                  gw.subscribe("mlb:first_place_team", division, () => compare("leader"));
                  gw.subscribe("mlb:teams", division, () => compare("teams"));
                  await until(() => wins.length > 0 && gw.current("mlb:teams", division), "both first values");
                  const firstWins = gw.current("mlb:first_place_team", division).wins;
                  for (let i = 0; i < 40; i++) await gw.mutation("mlb:record_win", { team: "Guardians" });
                  await until(() => gw.current("mlb:first_place_team", division).wins === firstWins + 40 &&
                    gw.current("mlb:teams", division).find((team) => team.name === "Guardians").wins === firstWins + 40,
                    "the 40th win in both");
                  const report = { callbacks, torn, firstWins, lastWins: gw.current("mlb:first_place_team", division).wins,
                    listWins: gw.current("mlb:teams", division).find((team) => team.name === "Guardians").wins };
                  gw.close();
                  return report;
                })()
                """, as: ConsistencyReport.self)
            #expect(report.torn == [], "torn views")
            #expect(report.lastWins == report.firstWins + 40)
            #expect(report.listWins == report.lastWins)
            // Each mutation changes both queries: both callbacks run, in one pass, at least once per transition.
            #expect(report.callbacks >= 2 * 40, "\(report.callbacks) callbacks")
        }
    }
}
