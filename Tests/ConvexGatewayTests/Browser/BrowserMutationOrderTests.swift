import Foundation
import TestSupport
import Testing

/// A page's mutations commit in the order it called them, as Convex promises a client: client.js sends them through
/// one ordered queue (`POST /mutations`, a batch at a time) in headless Chromium against the real gateway binary, alone
/// and behind a load balancer that sends each request to the other of two replicas.
@Suite("Mutation call order in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserMutationOrderTests {
    static let rounds = 20

    struct Report: Decodable {
        /// Rounds whose messages the deployment holds in another order than the calls', with that order.
        var outOfOrder: [String]
        /// Calls that failed, with their error.
        var failures: [String]
        /// The batches the page sent (`POST /mutations`) and the mutations they held.
        var batches: Int
        var mutations: Int
    }

    /// Page code: `rounds` rounds of mutations called without awaiting: four in one go, then two more after a task
    /// (while the first batch is on the wire), then two after a random pause. Each round's channel holds its
    /// messages in commit order (messages:list reads them in insertion order).
    static let script = """
        (async () => {
          const { ConvexGateway } = await import(`${location.origin}/client.js`);
          let batches = 0, mutations = 0;
          const nativeFetch = window.fetch.bind(window);
          window.fetch = async (url, init = {}) => {
            if (new URL(url, location.href).pathname === "/mutations") {
              batches += 1;
              mutations += JSON.parse(init.body).mutations.length;
            }
            return nativeFetch(url, init);
          };
          const gateway = new ConvexGateway(location.origin);
          const report = { outOfOrder: [], failures: [] };
          const run = `${Date.now()}`;
          for (let round = 0; round < \(rounds); round++) {
            const channel = `order-${run}-${round}`;
            const calls = [];
            const send = (i) => calls.push(gateway.mutation("messages:send", { body: `m${i}`, channel }));
            for (let i = 0; i < 4; i++) send(i);
            await new Promise((resolve) => setTimeout(resolve, 0));
            send(4); send(5);
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 10));
            send(6); send(7);
            try {
              await Promise.all(calls);
              const bodies = (await gateway.query("messages:list", { channel })).map((message) => message.body);
              const expected = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `m${i}`);
              if (bodies.join() !== expected.join()) report.outOfOrder.push(`round ${round}: ${bodies.join(" ")}`);
            } catch (error) {
              report.failures.push(`round ${round}: ${error.code ?? error.name}: ${error.message}`);
            }
          }
          return { ...report, batches, mutations };
        })()
        """

    private static func check(_ report: Report, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(report.failures.isEmpty, "\(report.failures.prefix(3))", sourceLocation: sourceLocation)
        #expect(
            report.outOfOrder.isEmpty,
            "\(report.outOfOrder.count) of \(rounds) rounds committed out of call order: \(report.outOfOrder.prefix(3))",
            sourceLocation: sourceLocation)
        // Every mutation went out once, and fewer batches than mutations: order costs a round trip per batch.
        #expect(report.mutations == 8 * rounds, "\(report.mutations) mutations sent", sourceLocation: sourceLocation)
        #expect(report.batches < report.mutations, "\(report.batches) batches", sourceLocation: sourceLocation)
    }

    @Test("unawaited mutations commit in call order, twenty rounds")
    func unawaitedMutationsCommitInCallOrder() async throws {
        try await TestGateway.run(.page) { _, _, page in
            Self.check(try await page.evaluate(Self.script, as: Report.self, timeout: .seconds(120)))
        }
    }

    @Test("unawaited mutations commit in call order through a balancer that alternates two replicas, twenty rounds")
    func callOrderAcrossReplicas() async throws {
        try await TestGateway.run(.process) { first in
            let deployment = try #require(
                BrowserCallTests.deploymentPort(inLog: first.log), "no convex.url in the first gateway's log")
            try await TestGateway.run(.process, arguments: ["--convex-url", "http://127.0.0.1:\(deployment)"]) {
                second in
                try await RoundRobinProxy.run(upstreams: [first.port, second.port]) { proxy in
                    try await HeadlessChromium.run { browser in
                        let page = try await BrowserPage.open(browser, url: "http://127.0.0.1:\(proxy)/healthz")
                        Self.check(try await page.evaluate(Self.script, as: Report.self, timeout: .seconds(120)))
                    }
                }
            }
        }
    }
}
