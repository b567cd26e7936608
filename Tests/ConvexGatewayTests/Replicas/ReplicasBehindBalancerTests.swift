import Convex
import Foundation
import OffThePool
import Synchronization
import TestSupport
import Testing

/// Replicas as users run them: three gateways behind HAProxy (``ReplicaSet``, `scripts/replicas`), replicas stopped
/// with SIGTERM and killed with SIGKILL, and their connections to the deployment cut, while clients of every kind
/// follow live values through the balancer (Server-Sent Events readers resuming with `Last-Event-ID`, a signed-in
/// stream, a long-poll, a /client.js page in Chromium) and writers change them. The oracle: every write acknowledged
/// is applied once, a lost answer is an outcome-unknown error (client.js sends a page's writes again under its session:
/// each is applied once, in the page's call order), a read after a write sees it, no client is shown a value
/// the deployment never had or one older than it showed before, each ends on the deployment's values, and no signed-in
/// client is shown as anyone else. Run by scripts/test after the parallel suites (`CONVEX_TEST_REPLICAS=1`), where
/// HAProxy and Chromium are installed.
@Suite(
    .serialized, .enabled(if: ProcessInfo.processInfo.environment["CONVEX_TEST_REPLICAS"] == "1"),
    .timeLimit(.minutes(10)))
struct ReplicasBehindBalancerTests {
    /// Ten graceful restarts and ten kills.
    static let rounds = 20

    /// A token the local deployment accepts (it checks no signature without an auth config): expires in 2100.
    static func unsignedToken(subject: String) -> String {
        Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "."
            + Base64URL.encode(Array(#"{"sub":"\#(subject)","exp":4102444800}"#.utf8)) + ".sig"
    }

    @Test("through HAProxy, replicas restarted and killed lose no write, run none twice, and readers never go back")
    func restartsAndKillsThroughTheBalancer() async throws {
        try await ReplicaSet.run { set in
            try await HeadlessChromium.run { browser in try await Self.chaosRounds(set, browser) }
        }
    }

    /// A request made off the pool (`request`), whose failure names `what` it was: which call of which round.
    static func call(_ what: String, _ request: @escaping @Sendable () throws -> TestResponse) async throws
        -> TestResponse
    {
        do {
            return try await blocking(request)
        } catch {
            throw TestFailure("\(what): \(error)")
        }
    }

    static func chaosRounds(_ set: ReplicaSet, _ browser: DevToolsConnection) async throws {
        let port = set.balancerPort
        let chaos = ChaosLog()
        let name = "replicas-\(UUID().uuidString.prefix(8))"
        let busyName = name + "-busy"
        let channel = name + "-feed"
        let reader = ReconnectingReader(port: port, target: "/subscribe/conformance:counter?name=\(name)")
        let busyReader = ReconnectingReader(port: port, target: "/subscribe/conformance:counter?name=\(busyName)")
        let poller = LongPoller(port: port, target: "/query/conformance:counter?name=\(busyName)", chaos: chaos)
        // A long-poll of the rounds' count, which changes once a round: it waits, through every disruption.
        let roundPoller = LongPoller(port: port, target: "/query/conformance:counter?name=\(name)", chaos: chaos)
        let readers = [reader, busyReader]
        let reading = readers.map { reader in Task { await reader.run() } }
        let polling = [Task { await poller.run() }, Task { await roundPoller.run() }]
        defer {
            for reader in readers { reader.stop() }
            for task in reading { task.cancel() }
            poller.stop()
            roundPoller.stop()
            for task in polling { task.cancel() }
        }
        #expect(await eventually(timeout: .seconds(30)) { reader.numbers.contains(0) }, "the reader's first value")
        // A signed-in stream, by a ticket minted through the balancer: it must stay signed in whichever replica it
        // reconnects to (they share the ticket key), never silently anonymous.
        let token = Self.unsignedToken(subject: "replica-user")
        let minted = try await Self.call("minting a stream ticket") {
            try RawConnection.request(
                "POST", "/stream-tickets", port: port, headers: ["Authorization": "Bearer \(token)"], body: [])
        }
        let ticket = try #require(minted.json?["ticket"].flatMap { if case .string(let t) = $0 { t } else { nil } })
        let signedIn = ReconnectingReader(port: port, target: "/subscribe/conformance:whoami?ticket=\(ticket)")
        let signedInReading = Task { await signedIn.run() }
        defer {
            signedIn.stop()
            signedInReading.cancel()
        }
        #expect(await eventually(timeout: .seconds(30)) { !signedIn.values.isEmpty }, "the signed-in stream")
        // Beside the rounds, a writer that never pauses: some of its mutations are in flight when a replica goes.
        let writer = BusyWriter(port: port, name: busyName, chaos: chaos)
        let writing = Task { await writer.run() }
        defer { writer.stop() }
        let page = try await ReplicaPage.open(browser, port: port, name: name, busyName: busyName, channel: channel)
        for round in 1...Self.rounds {
            // A write through whichever replica the balancer picks: applied exactly once (the count is the round).
            let answer = try await Self.call("round \(round): the mutation") {
                try RawConnection.request(
                    "POST", "/mutation/conformance:increment", port: port,
                    headers: ["Content-Type": "application/json"], body: Array(#"{"name":"\#(name)"}"#.utf8))
            }
            #expect(answer.status == 200, "round \(round): the mutation failed: \(answer.text)")
            #expect(answer.text == "\(round)", "round \(round): the count after the mutation")
            // A read after the write sees it, through whichever replica answers.
            let timestamp = answer.header("Convex-Timestamp") ?? ""
            #expect(!timestamp.isEmpty, "round \(round): no Convex-Timestamp")
            let read = try await Self.call("round \(round): the read after the write") {
                try RawConnection.request(
                    "GET", "/query/conformance:counter?name=\(name)", port: port,
                    headers: ["Convex-Min-Timestamp": timestamp])
            }
            #expect(read.status == 200 && read.text == "\(round)", "round \(round): read after write: \(read.text)")
            let post = try await Self.call("round \(round): the post") {
                try RawConnection.request(
                    "POST", "/mutation/feed:post", port: port, headers: ["Content-Type": "application/json"],
                    body: Array(#"{"body":"round \#(round)","channel":"\#(channel)"}"#.utf8))
            }
            #expect(post.status == 200, "round \(round): the post failed: \(post.text)")
            // The reader gets there, whatever happened to its replica.
            let seen = await eventually(timeout: .seconds(30)) { reader.numbers.last == round }
            #expect(seen, "round \(round): the reader's values \(reader.numbers)")
            // Then a replica goes: gracefully on odd rounds, killed on even ones.
            let graceful = round % 2 == 1
            let replica = round % 3 + 1
            // Every client of the busy count is back from the last disruption before the next, so that each
            // client's time to its next event measures one disruption.
            try await Self.waitForEveryClient(since: chaos.all.last?.at, busyReader, poller, page)
            // Before a graceful stop, an action that outlasts the drain delay, sent to that replica itself: it must
            // be answered, not cut off.
            let replicaPort = port + replica
            let slow: Task<TestResponse, any Error>? =
                graceful
                ? Task {
                    try await Self.call("round \(round): the action running at SIGTERM, sent to replica \(replica)") {
                        try RawConnection.request(
                            "POST", "/action/conformance:sleep", port: replicaPort,
                            headers: ["Content-Type": "application/json"], body: Array(#"{"ms":3000}"#.utf8))
                    }
                } : nil
            chaos.record(graceful ? .sigterm : .sigkill)
            try await set.signal(graceful ? SIGTERM : SIGKILL, replica: replica)
            if let slow {
                let answer = try await slow.value
                #expect(answer.status == 200, "round \(round): the action running at SIGTERM: \(answer.text)")
            }
            // Every fourth round, the network between the replicas and the deployment breaks as well.
            if round % 4 == 0 {
                try await Self.waitForEveryClient(since: chaos.all.last?.at, busyReader, poller, page)
                chaos.record(.upstreamCut)
                let cut = try await set.cutUpstream()
                #expect(cut >= 1, "round \(round): the link carried no connection of the replicas")
                // Real time: the window in which a stream the cut ended would end (checked below); the next
                // disruption waits for it, so that the streams it ends are not counted as the cut's.
                try await Task.sleep(for: .seconds(2))
            }
        }
        writer.stop()
        await writing.value
        let busy = try await writer.check()
        let posts = try await Self.bodies("the final feed read", "/query/feed:all?channel=\(channel)", port: port)
        #expect(posts.count == Self.rounds, "the deployment's feed: \(posts)")
        // The page's own writes (client.js, POST /mutations through the balancer): every one committed once, in the
        // order the page called them, whatever replica went while it was on its way.
        let writes = try await page.stopWrites()
        #expect(writes.failures.isEmpty, "the page's mutations failed: \(writes.failures.prefix(5))")
        let bodies = try await Self.bodies(
            "the page's writes", "/query/messages:list?channel=\(channel)-writes", port: port)
        #expect(writes.sent > 3 * Self.rounds, "the page's writer sent \(writes.sent)")
        #expect(
            bodies == (0..<writes.sent).map { "p\($0)" },
            "the page's \(writes.sent) writes as the deployment holds them (twice, missing or out of order): \(bodies)")
        let record = try await page.record(untilCount: Self.rounds, busy: busy, posts: posts.count)
        ReplicaPage.check(record, rounds: Self.rounds, busy: busy, feed: posts)

        let values = reader.numbers
        #expect(values.count == reader.values.count, "a value that is not a count: \(reader.values)")
        #expect(values == values.sorted(), "a value went back in time: \(values)")
        #expect(Set(values).isSuperset(of: [Self.rounds]), "the last write reached the reader: \(values)")
        #expect(
            await eventually(timeout: .seconds(30)) {
                busyReader.numbers.last == busy && poller.values.last == "\(busy)"
            },
            "the busy count's readers end at \(busy): \(busyReader.numbers.suffix(5)), \(poller.values.suffix(5))")
        let busyValues = busyReader.numbers
        #expect(busyValues == busyValues.sorted(), "a busy count went back in time: \(busyValues.suffix(40))")
        let polled = poller.values.compactMap { Int($0) }
        #expect(
            polled.count == poller.values.count && polled == polled.sorted(),
            "the long-poll's values went back or were not counts: \(poller.values.suffix(40))")
        let rounds = roundPoller.values.compactMap { Int($0) }
        #expect(rounds == rounds.sorted() && rounds.last == Self.rounds, "the rounds' long-poll: \(roundPoller.values)")
        // A long-poll whose replica is killed under it gets the balancer's 502, as any request there would, within a
        // few seconds of the kill; a graceful stop or a cut upstream must cost it nothing.
        let kills = chaos.all.filter { $0.disruption == .sigkill }.map(\.at)
        for (name, poller) in [("busy", poller), ("rounds", roundPoller)] {
            let unexplained = poller.errors.filter { error in
                !(error.text.hasPrefix("502")
                    && kills.contains { error.at >= $0 && error.at.timeIntervalSince($0) < 5 })
            }
            #expect(unexplained.isEmpty, "the \(name) long-poll got errors: \(unexplained.map(\.text))")
        }
        // A cut upstream leaves the clients' streams open: the replicas connect to the deployment again under them.
        let cuts = chaos.all.filter { $0.disruption == .upstreamCut }.map(\.at)
        let pageLosses = record.connection.filter { !$0.connected }.map { Date(timeIntervalSince1970: $0.at / 1000) }
        for (client, ends) in [("stream reader", busyReader.ends + reader.ends), ("page", pageLosses)] {
            let afterCuts = ends.filter { end in cuts.contains { end >= $0 && end.timeIntervalSince($0) < 2 } }
            #expect(
                afterCuts.isEmpty,
                """
                a \(client)'s stream ended within 2 s of a cut upstream: \(afterCuts) (cuts at \(cuts)); the balancer's \
                log: \(set.file("haproxy.log").suffix(3000)); the replicas' logs: \
                \((1...3).map { set.file("replica-\($0).log").suffix(1500) })
                """)
        }
        for reader in readers + [signedIn] {
            #expect(reader.failures.isEmpty, "\(reader.target) got errors: \(reader.failures)")
        }
        #expect(
            signedIn.values.allSatisfy { $0.contains("replica-user") },
            "the signed-in stream showed another identity: \(signedIn.values)")
        #expect(!signedIn.reconnectMilliseconds.isEmpty, "the signed-in stream never had to move")
        print(
            "replicas: the stream reader reconnected \(reader.reconnectMilliseconds.count) times; time to its next stream, ms: \(reader.reconnectMilliseconds.sorted())"
        )
        print("replicas: the long-polls' errors: \((poller.errors + roundPoller.errors).map(\.text))")
        // The time from each disruption to a client's next event, for the clients of the busy count (which changes
        // all the time, so its next event is due at once).
        let pageArrivals = record.busy.map { Date(timeIntervalSince1970: $0.at / 1000) }
        for (client, arrivals) in [
            ("SSE reader", busyReader.arrivals), ("long-poll", poller.arrivals), ("client.js page", pageArrivals),
        ] {
            print("replicas: from a disruption to the \(client)'s next event: \(chaos.summary(of: arrivals))")
        }
        // Where the page waited more than 600 ms, what its stream did meanwhile (times in ms from the disruption).
        for (disruption, at) in chaos.all {
            let ms = { (date: Date) in Int(date.timeIntervalSince(at) * 1000) }
            guard let next = pageArrivals.first(where: { $0 > at }).map(ms), next > 600 else { continue }
            let stream = record.connection.map { (Date(timeIntervalSince1970: $0.at / 1000), $0.connected) }
                .filter { ms($0.0) > -1000 && ms($0.0) < 5000 }
                .map { "\($0.1 ? "open" : "lost") at \(ms($0.0))" }
            let sse = busyReader.arrivals.filter { $0 > at }.prefix(5).map(ms)
            print(
                "replicas: the page's next event came \(next) ms after a \(disruption.rawValue); its stream: \(stream);"
                    + " the SSE reader's next events: \(sse)")
        }
    }

    /// The `body` fields of the documents a list query (`GET target`) answers, read through the balancer.
    static func bodies(_ what: String, _ target: String, port: Int) async throws -> [String] {
        let list = try await call(what) { try RawConnection.request("GET", target, port: port) }
        guard case .array(let items)? = list.json else { return [] }
        return items.compactMap { if case .string(let body)? = $0["body"] { body } else { nil } }
    }

    /// Waits until the busy count's SSE reader, long-poll and page have each had a value since `time`.
    static func waitForEveryClient(
        since time: Date?, _ reader: ReconnectingReader, _ poller: LongPoller, _ page: ReplicaPage
    ) async throws {
        guard let time else { return }
        let back = await eventually(timeout: .seconds(30)) {
            guard (reader.arrivals.last ?? .distantPast) > time, (poller.arrivals.last ?? .distantPast) > time else {
                return false
            }
            return ((try? await page.lastBusyArrival()) ?? nil).map { $0 > time } ?? false
        }
        #expect(back, "a client of the busy count had no value within 30 s of the last disruption")
    }
}
