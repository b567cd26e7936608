import Foundation
import TestSupport
import Testing

/// Read your writes across gateway replicas (issue 22): two gateway processes on one deployment behind a load balancer
/// (``RoundRobinProxy``) that alternates them per request, so each query of the page goes to the other replica than
/// the mutation before it. The second replica reaches the deployment through a ``LaggingRelay``: its live results
/// change a little after each commit, as a replica further away would see them. client.js sends the highest
/// `Convex-Timestamp` it has seen as `Convex-Min-Timestamp`, and the replica answers from a snapshot at least that new.
extension BrowserCallTests {
    static let replicaRounds = 100
    static let replicaLag = Duration.milliseconds(30)

    struct ReplicaReport: Decodable {
        /// The rounds of one kind of query, each after a mutation of the same counter.
        struct Phase: Decodable {
            /// Rounds whose query did not read the count its mutation returned.
            var stale: [String]
            /// Calls that failed, with their error.
            var failures: [String]
            /// Rounds whose mutation did not go to replica 0 and query to replica 1.
            var misrouted: [String]
            /// Rounds whose query did not send a `Convex-Min-Timestamp` at least its mutation's `Convex-Timestamp`.
            var unfloored: [String]
            /// Answers without a `Convex-Timestamp`.
            var untimed: [String]
        }

        /// `gateway.query` (a POST, which the gateway runs as a one-shot query).
        var calls: Phase
        /// `GET /query/<fn>` with client.js's `gateway.timestamp`: answered from the replica's live result.
        var gets: Phase
        /// `gateway.timestamp` after each round.
        var timestamps: [String?]
    }

    @Test("client.js reads its own writes through a load balancer that alternates two gateway replicas per request")
    func readYourWritesAcrossReplicas() async throws {
        try await TestGateway.run(.process) { first in
            // The first gateway runs the embedded deployment; the second is a replica on it, behind the lagging link.
            let deployment = try #require(
                Self.deploymentPort(inLog: first.log), "no convex.url in the first gateway's log:\n\(first.log)")
            try await LaggingRelay.run(upstream: deployment, lag: Self.replicaLag) { relay in
                try await TestGateway.run(.process, arguments: ["--convex-url", "http://127.0.0.1:\(relay)"]) {
                    second in
                    try await RoundRobinProxy.run(upstreams: [first.port, second.port]) { proxy in
                        try await HeadlessChromium.run { browser in
                            let page = try await BrowserPage.open(browser, url: "http://127.0.0.1:\(proxy)/healthz")
                            let report = try await page.evaluate(Self.replicaRoundsScript, as: ReplicaReport.self)
                            Self.check(report.calls, "client.js queries")
                            Self.check(report.gets, "GETs from live results")
                            let timestamps = report.timestamps.compactMap { $0.flatMap { UInt64($0) } }
                            let readable = timestamps.count
                            #expect(readable == 2 * Self.replicaRounds, "gateway.timestamp after each round")
                            #expect(timestamps == timestamps.sorted(), "gateway.timestamp never goes back")
                        }
                    }
                }
            }
        }
    }

    private static func check(
        _ phase: ReplicaReport.Phase, _ name: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let stale = phase.stale.count
        #expect(
            stale == 0,
            """
            \(name): \(stale) of \(replicaRounds) read a stale count, without read your writes across replicas: \
            \(phase.stale.prefix(3).joined(separator: "; "))
            """, sourceLocation: sourceLocation)
        let failures = phase.failures.count
        #expect(failures == 0, "\(name): \(phase.failures.prefix(3))", sourceLocation: sourceLocation)
        let misrouted = phase.misrouted.count
        #expect(misrouted == 0, "\(name): \(phase.misrouted.prefix(3))", sourceLocation: sourceLocation)
        let unfloored = phase.unfloored.count
        #expect(
            unfloored == 0, "\(name): no Convex-Min-Timestamp from the mutation: \(phase.unfloored.prefix(3))",
            sourceLocation: sourceLocation)
        let untimed = phase.untimed.count
        #expect(
            untimed == 0, "\(name): answers without Convex-Timestamp: \(phase.untimed.prefix(3))",
            sourceLocation: sourceLocation)
    }

    /// The port of the first gateway's embedded deployment, from its log: `convex.url=http://127.0.0.1:<port>`.
    static func deploymentPort(inLog log: String) -> Int? {
        guard let range = log.range(of: "convex.url=") else { return nil }
        return URL(string: String(log[range.upperBound...].prefix { !$0.isWhitespace }))?.port
    }

    /// Page code: two phases of rounds, each round a mutation then a query of the same counter, every fetch watched to
    /// see which replica answered and which timestamps went each way.
    static let replicaRoundsScript = """
        (async () => {
          const seen = [];
          const nativeFetch = window.fetch.bind(window);
          window.fetch = async (url, init = {}) => {
            const response = await nativeFetch(url, init);
            seen.push({
              path: new URL(url, location.href).pathname,
              replica: response.headers.get("X-Replica"),
              sent: new Headers(init.headers).get("Convex-Min-Timestamp"),
              ts: response.headers.get("Convex-Timestamp"),
            });
            return response;
          };
          const { ConvexGateway } = await import(`${location.origin}/client.js`);
          const gw = new ConvexGateway(location.origin);
          // The proxy alternates per request: line up so that each mutation goes to replica 0, the deployment's own
          // gateway, and the query after it to replica 1, the lagging one.
          for (let i = 0; i < 3 && (await nativeFetch("/healthz")).headers.get("X-Replica") !== "1"; i++);
          const timestamps = [];
          const phase = async (name, read) => {
            const report = { stale: [], failures: [], misrouted: [], unfloored: [], untimed: [] };
            for (let round = 1; round <= \(replicaRounds); round++) {
              const before = seen.length;
              let wrote, got;
              try {
                wrote = await gw.mutation("conformance:increment", { name });
                got = await read(name);
              } catch (error) {
                report.failures.push(`round ${round}: ${error.code ?? error.name}: ${error.message}`);
                continue;
              }
              if (got !== wrote) report.stale.push(`round ${round}: the mutation returned ${wrote}, the query read ${got}`);
              const [mutation, query] = seen.slice(before);
              if (mutation?.replica !== "0" || query?.replica !== "1") {
                report.misrouted.push(`round ${round}: replicas ${mutation?.replica} and ${query?.replica}`);
              }
              for (const call of [mutation, query]) if (!call?.ts) report.untimed.push(`round ${round}: ${call?.path}`);
              if (!query?.sent || !mutation?.ts || BigInt(query.sent) < BigInt(mutation.ts)) {
                report.unfloored.push(`round ${round}: committed at ${mutation?.ts}, the query sent ${query?.sent}`);
              }
              timestamps.push(gw.timestamp ?? null);
            }
            return report;
          };
          const calls = await phase("calls", (name) => gw.query("conformance:counter", { name }));
          const gets = await phase("gets", async (name) => {
            const headers = gw.timestamp === undefined ? {} : { "Convex-Min-Timestamp": gw.timestamp };
            const response = await fetch(`/query/conformance:counter?name=${encodeURIComponent(name)}`, { headers });
            if (!response.ok) throw new Error(`GET answered ${response.status}: ${await response.text()}`);
            return response.json();
          });
          return { calls, gets, timestamps };
        })()
        """
}
