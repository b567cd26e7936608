import Foundation
import TestSupport
import Testing

/// What Convex promises a client across an outage, in headless Chromium against the real gateway binary: a mutation
/// called while the gateway is down stays pending with its optimistic value shown and commits once when it is back; a
/// mutation whose answer was cut is sent again and commits once; an optimistic update written without a guard never
/// shows its change twice, whichever of the stream and the answer comes first; values keep their types whatever the
/// gateway's default output mode.
@Suite("Outages and optimistic updates in a real browser", .browser, .serialized, .timeLimit(.minutes(8)))
struct BrowserOutageTests {
    static let rounds = 20

    /// Page code shared by the tests: `window.counterStates` records every value the page shows for the counter
    /// `name`, and `increment()` calls the mutation with an optimistic update that adds one to it.
    static func counterPage(_ name: String) -> String {
        """
        const { ConvexGateway } = await import(`${location.origin}/client.js`);
        window.gateway = new ConvexGateway(location.origin);
        window.counterStates = [];
        gateway.subscribe("conformance:counter", { name: "\(name)" }, (value) => { counterStates.push(value); changed(); });
        await until(() => counterStates.length > 0, "the counter's first value");
        window.increment = () => gateway.mutation("conformance:increment", { name: "\(name)" }, {
          optimisticUpdate: (store) => {
            const value = store.getQuery("conformance:counter", { name: "\(name)" });
            if (value !== undefined) store.setQuery("conformance:counter", { name: "\(name)" }, value + 1);
          },
        });
        """
    }

    struct OutageRound: Decodable {
        /// The counter shown right after the call, and after the outage, before the gateway came back.
        var shownAtOnce: Int
        var shownAtEnd: Int
        var pending: Bool
    }

    struct Settled: Decodable {
        var value: Int?
        var error: String?
        var counter: Int
        var states: [Int]
    }

    @Test(
        "a mutation called during a 1.5 s outage of the gateway stays pending, shown, and commits once when it is back")
    func mutationDuringAnOutageCommitsOnce() async throws {
        try await BrowserPage.withRestartableGateway { restart, browser, origin in
            var opened: BrowserPage?
            try await restart { _ in
                let page = try await BrowserPage.open(browser, url: "\(origin)/healthz")
                opened = page
                _ = try await page.evaluate("(async () => { \(Self.counterPage("outage")) return 0; })()", as: Int.self)
            }
            let page = try #require(opened)
            for round in 1...Self.rounds {
                // The gateway is down: the call fails to connect, so it waits and tries again.
                let down = try await page.evaluate(
                    """
                    (async () => {
                      window.sent = increment().then((value) => ({ value }), (error) => ({ error: `${error.code}: ${error.message}` }));
                      window.settled = undefined;
                      sent.then((outcome) => { window.settled = outcome; });
                      const shownAtOnce = counterStates.at(-1);
                      await new Promise((resolve) => setTimeout(resolve, 1500));
                      return { shownAtOnce, shownAtEnd: counterStates.at(-1), pending: window.settled === undefined };
                    })()
                    """, as: OutageRound.self)
                #expect(down.shownAtOnce == round && down.shownAtEnd == round, "round \(round): \(down)")
                #expect(down.pending, "round \(round): the mutation settled while the gateway was down")
                try await restart { _ in
                    let settled = try await page.evaluate(
                        """
                        (async () => {
                          const outcome = await sent;
                          const counter = await gateway.query("conformance:counter", { name: "outage" });
                          await until(() => counterStates.at(-1) === counter, "the server's value shown");
                          return { ...outcome, counter, states: counterStates };
                        })()
                        """, as: Settled.self, timeout: .seconds(60))
                    #expect(settled.error == nil, "round \(round): \(settled.error ?? "")")
                    #expect(settled.value == round && settled.counter == round, "round \(round): ran other than once")
                }
            }
            let states = try await page.evaluate("counterStates", as: [Int].self)
            // Shown at once and never taken back: the values shown only grow, one at a time.
            #expect(zip(states, states.dropFirst()).allSatisfy { $1 == $0 || $1 == $0 + 1 }, "states: \(states)")
        }
    }

    @Test("a mutation whose answer was cut is sent again and commits once, twenty rounds")
    func cutAnswerIsResentAndCommitsOnce() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  // The first try of each batch reaches the gateway and commits; its answer never reaches the page.
                  const nativeFetch = window.fetch.bind(window);
                  const sent = [];
                  let cut = true;
                  window.fetch = async (url, init = {}) => {
                    if (new URL(url, location.href).pathname !== "/mutations") return nativeFetch(url, init);
                    sent.push({ session: new Headers(init.headers).get("Convex-Session-Id"), body: init.body });
                    const response = await nativeFetch(url, init);
                    if (cut) { cut = false; throw new TypeError("Failed to fetch"); }
                    return response;
                  };
                  \(Self.counterPage("cut"))
                  const problems = [];
                  for (let round = 1; round <= \(Self.rounds); round++) {
                    cut = true;
                    const before = sent.length;
                    const value = await increment();
                    const counter = await gateway.query("conformance:counter", { name: "cut" });
                    if (value !== round || counter !== round) problems.push(`round ${round}: value ${value}, counter ${counter}`);
                    const tries = sent.slice(before);
                    if (tries.length !== 2 || tries[0].session !== tries[1].session || tries[0].body !== tries[1].body) {
                      problems.push(`round ${round}: tries ${JSON.stringify(tries)}`);
                    }
                  }
                  await until(() => counterStates.at(-1) === \(Self.rounds), "the last value shown");
                  return { problems, states: counterStates };
                })()
                """, as: CutReport.self, timeout: .seconds(120))
            #expect(report.problems.isEmpty, "\(report.problems.prefix(3))")
            #expect(
                zip(report.states, report.states.dropFirst()).allSatisfy { $1 == $0 || $1 == $0 + 1 },
                "states: \(report.states)")
        }
    }

    struct CutReport: Decodable {
        var problems: [String]
        var states: [Int]
    }

    struct ListReport: Decodable {
        /// Every list of message bodies the page showed, in order.
        var states: [[String]]
        var final: [String]
    }

    /// Page code: `rounds` messages added with an optimistic update written as Convex's docs write it (no check
    /// whether the list holds the message already), each awaited; `delay` is code patching `fetch` first.
    static func unguardedAdds(channel: String, delay: String) -> String {
        """
        (async () => {
          \(delay)
          const { ConvexGateway } = await import(`${location.origin}/client.js`);
          const gateway = new ConvexGateway(location.origin);
          const args = { channel: "\(channel)" };
          const states = [];
          gateway.subscribe("messages:list", args, (messages) => { states.push(messages.map((m) => m.body)); changed(); });
          await until(() => states.length > 0, "the first list");
          for (let i = 0; i < \(rounds); i++) {
            const calls = [];
            for (const body of [`a${i}`, `b${i}`]) {
              calls.push(gateway.mutation("messages:send", { body, ...args }, {
                optimisticUpdate: (store, sent) => {
                  const list = store.getQuery("messages:list", args) ?? [];
                  store.setQuery("messages:list", args, [...list, { _id: `optimistic-${sent.body}`, body: sent.body }]);
                },
              }));
            }
            await Promise.all(calls);
          }
          await until(() => states.at(-1).length === \(2 * rounds)
            && gateway.current("messages:list", args).every((m) => !m._id.startsWith("optimistic-")), "the server's list");
          return { states, final: states.at(-1) };
        })()
        """
    }

    /// Page code delaying the answers of `POST /mutations` by 300 ms: the stream's transition holding a mutation comes
    /// well before its answer.
    static let slowAnswers = """
        const nativeFetch = window.fetch.bind(window);
        window.fetch = async (url, init) => {
          const response = await nativeFetch(url, init);
          if (new URL(url, location.href).pathname === "/mutations") await new Promise((r) => setTimeout(r, 300));
          return response;
        };
        """

    private static func checkNeverTwice(_ report: ListReport, sourceLocation: SourceLocation = #_sourceLocation) {
        let expected = (0..<rounds).flatMap { ["a\($0)", "b\($0)"] }
        #expect(report.final == expected, "final: \(report.final)", sourceLocation: sourceLocation)
        let twice = report.states.filter { Set($0).count != $0.count }
        #expect(twice.isEmpty, "a message shown twice: \(twice.prefix(3))", sourceLocation: sourceLocation)
        // Never reordered: every state lists its messages in call order.
        let reordered = report.states.filter { state in state != expected.filter(state.contains) }
        #expect(reordered.isEmpty, "reordered: \(reordered.prefix(3))", sourceLocation: sourceLocation)
        // Never taken back: once shown, a message stays.
        let lost = expected.filter { body in
            guard let first = report.states.firstIndex(where: { $0.contains(body) }) else { return true }
            return report.states[first...].contains { !$0.contains(body) }
        }
        #expect(lost.isEmpty, "shown, then gone: \(lost.prefix(3))", sourceLocation: sourceLocation)
    }

    @Test("an unguarded optimistic add is never shown twice with the stream 300 ms slower than the calls")
    func unguardedAddWithASlowStream() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let script = Self.unguardedAdds(channel: "slow-stream", delay: BrowserOptimisticUpdateTests.slowStreams)
            Self.checkNeverTwice(try await page.evaluate(script, as: ListReport.self, timeout: .seconds(120)))
        }
    }

    @Test("an unguarded optimistic add is never shown twice with the stream 300 ms faster than the calls")
    func unguardedAddWithSlowAnswers() async throws {
        try await TestGateway.run(.page) { _, _, page in
            let script = Self.unguardedAdds(channel: "slow-answers", delay: Self.slowAnswers)
            Self.checkNeverTwice(try await page.evaluate(script, as: ListReport.self, timeout: .seconds(120)))
        }
    }

    struct Backoffs: Decodable {
        /// The delays client.js asked for before each try to open its stream again, in milliseconds.
        var delays: [Double]
        /// The console warnings it wrote meanwhile.
        var warnings: [String]
    }

    @Test("after a lost stream, reconnects back off to the ceiling, twenty tries, with one console warning")
    func reconnectsBackOffToTheCeiling() async throws {
        try await BrowserPage.withRestartableGateway { restart, browser, origin in
            var opened: BrowserPage?
            try await restart { _ in
                let page = try await BrowserPage.open(browser, url: "\(origin)/healthz")
                opened = page
                _ = try await page.evaluate(
                    """
                    (async () => {
                      // The backoff's timers, as a test gives them: each delay is recorded and waited a fiftieth of;
                      // no jitter (the random factor is 1).
                      window.delays = [];
                      window.warnings = [];
                      const warn = console.warn.bind(console);
                      console.warn = (...args) => { warnings.push(args.join(" ")); warn(...args); };
                      const timers = {
                        setTimeout: (callback, ms) => { delays.push(ms); changed(); return setTimeout(callback, ms / 50); },
                        clearTimeout: (timer) => clearTimeout(timer),
                        random: () => 0.5,
                      };
                      const { ConvexGateway } = await import(`${location.origin}/client.js`);
                      window.gateway = new ConvexGateway(location.origin, { timers });
                      gateway.subscribe("conformance:counter", { name: "backoff" }, () => changed());
                      await until(() => gateway.connectionState().isStreamConnected, "the stream open");
                      delays.length = 0;
                      return true;
                    })()
                    """, as: Bool.self)
            }
            // The gateway has stopped: nothing listens on its port.
            let page = try #require(opened)
            let report = try await page.evaluate(
                """
                (async () => {
                  await until(() => delays.length >= 21, () => `delays so far: ${delays}`, 60000);
                  return { delays, warnings };
                })()
                """, as: Backoffs.self, timeout: .seconds(90))
            // The first try may follow the stream's own retry:; from the next, 100 ms doubling to the 10 s ceiling.
            let backoffs = Array(report.delays.dropFirst().prefix(20))
            let expected = (0..<20).map { Double(min(10_000, 100 << $0)) }
            #expect(backoffs == expected, "delays: \(report.delays)")
            #expect(
                report.warnings.filter { $0.contains("unreachable") }.count == 1, "warnings: \(report.warnings)")
        }
    }

    struct Types: Decodable {
        var streamed: String
        var queried: String
        var mutated: String
        var sum: Int
    }

    @Test("with --format clean, client.js values keep their types")
    func cleanDefaultFormatLeavesValuesAlone() async throws {
        try await TestGateway.run(.page, environment: ["GATEWAY_FORMAT": "clean"]) { _, _, page in
            let types = try await page.evaluate(
                """
                (async () => {
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  const gateway = new ConvexGateway(location.origin);
                  let streamed;
                  gateway.subscribe("conformance:counter", { name: "clean" }, (value) => { streamed = value; changed(); });
                  const mutated = await gateway.mutation("conformance:increment", { name: "clean" });
                  await until(() => streamed === 1, "the streamed value");
                  const queried = await gateway.query("conformance:counter", { name: "clean" });
                  return { streamed: typeof streamed, queried: typeof queried, mutated: typeof mutated, sum: queried + 1 };
                })()
                """, as: Types.self)
            #expect(types.streamed == "number" && types.queried == "number" && types.mutated == "number", "\(types)")
            #expect(types.sum == 2)
        }
    }
}
