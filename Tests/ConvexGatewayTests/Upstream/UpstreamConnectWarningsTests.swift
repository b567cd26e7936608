import Clocks
import Convex
import Foundation
import Logging
import TestSupport
import Testing

@testable import ConvexGateway

/// A wrong or down deployment speaks up: failures to connect are logged at `warning`, once per interval for all caller
/// identities, with the cause in plain words; the start-up log names the deployment URL without secrets.
@Suite(.timeLimit(.minutes(5)))
struct UpstreamConnectWarningsTests {
    typealias Recorder = UpstreamFailureLoggingTests.Recorder

    static let refused =
        "Connection to ws://127.0.0.1:9/api/sync failed: NIOConnectionError(host: \"127.0.0.1\", port: 9, "
        + "dnsAError: nil, dnsAAAAError: nil, connectionErrors: [NIOPosix.SingleConnectionFailure(target: "
        + "[IPv4]127.0.0.1/127.0.0.1:9, error: connection reset (error set): Connection refused (errno: 111))])"

    /// The warning lines a recorder holds.
    static func warnings(_ recorder: Recorder) -> [String] {
        recorder.messages.withLock { $0 }.filter { $0.hasPrefix("warning Cannot connect to the Convex deployment") }
    }

    @Test func repeatedFailuresAreOneLinePerIntervalOnTheInjectedClock() async {
        let recorder = Recorder()
        let clock = TestClock<Duration>()
        let warnings = UpstreamConnectWarnings(
            deploymentURL: "http://127.0.0.1:9", clock: GatewayClock(clock), interval: .seconds(30),
            logger: recorder.logger)
        for _ in 0..<5 { warnings.connectionFailed(reason: Self.refused) }
        #expect(Self.warnings(recorder).count == 1, "\(recorder.messages.withLock { $0 })")
        let first = Self.warnings(recorder).first ?? ""
        #expect(first.contains("cause=connection refused"), "\(first)")
        #expect(first.contains("convex.url=http://127.0.0.1:9"), "\(first)")
        #expect(first.contains("errno: 111"), "the raw detail goes to the log too: \(first)")

        await clock.advance(by: .seconds(29))
        warnings.connectionFailed(reason: Self.refused)
        #expect(Self.warnings(recorder).count == 1, "still within the interval")
        await clock.advance(by: .seconds(1))
        warnings.connectionFailed(reason: Self.refused)
        let lines = Self.warnings(recorder)
        #expect(lines.count == 2)
        #expect(lines.last?.contains("failures.unlogged=5") == true, "\(lines)")

        // A connection that was up and ended is not a failure to connect: the client's own log has it.
        await clock.advance(by: .seconds(60))
        warnings.connectionFailed(reason: "InactiveServer")
        #expect(Self.warnings(recorder).count == 2)
    }

    @Test(
        arguments: [
            (refused, ConnectFailureCause.refused),
            ("Connection to ws://h/api/sync timed out after 5.0 seconds", .timedOut),
            (
                "Connection to wss://h/api/sync failed: "
                    + "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:"
                    + "OPENSSL_internal:CERTIFICATE_VERIFY_FAILED]))",
                .tls
            ),
            (
                "Connection to wss://nohost.invalid/api/sync failed: "
                    + "NIOConnectionError(host: \"nohost.invalid\", port: 443, dnsAError: "
                    + "Optional(NIOPosix.SocketAddressError.unknown(host: \"nohost.invalid\", port: 443)), "
                    + "dnsAAAAError: nil, connectionErrors: [])", .dns
            ),
            (
                "Connection to ws://h/api/sync failed: the server answered the WebSocket upgrade with 404 Not Found",
                .notADeployment
            ),
            ("Connection to ws://tls.refused.test/api/sync failed: connection reset by peer", .reset),
            ("Connection to ws://h/api/sync failed: something else", .other),
        ] as [(String, ConnectFailureCause)])
    func theCauseInPlainWords(reason: String, cause: ConnectFailureCause) {
        #expect(ConnectFailureCause(reason: reason) == cause, "\(reason)")
    }

    @Test func notAFailureToConnect() {
        for reason in ["InactiveServer", "Closed by server (code 1000)", "Connection closed", "StartVersionMismatch"] {
            #expect(ConnectFailureCause(reason: reason) == nil, "\(reason)")
        }
    }

    @Test func aLoggedURLHasNoSecrets() {
        #expect("\(RedactedURL("https://happy-otter-123.convex.cloud"))" == "https://happy-otter-123.convex.cloud")
        #expect("\(RedactedURL("http://127.0.0.1:3210/"))" == "http://127.0.0.1:3210/")
        #expect("\(RedactedURL("https://user:key@host.test/path?token=abc#x"))" == "https://host.test/path")
        #expect("\(RedactedURL("https://a@b@host.test"))" == "https://host.test")
        #expect("\(RedactedURL("host.test?key=1"))" == "host.test")
    }

    /// Every caller identity has a connection of its own; when the deployment refuses them all, the log has one line.
    @Test func manyIdentitiesFailingToConnectMakeOneWarning() async throws {
        try await withRefusingPort { port in
            let recorder = Recorder()
            let factory = try ClientUpstream.factory(
                deploymentUrl: "http://127.0.0.1:\(port)", connectWarningInterval: .seconds(3600),
                logger: recorder.logger)
            let metrics = GatewayMetrics()
            let identities: [UpstreamIdentity] = [.anonymous] + (0..<4).map { UpstreamIdentity.bearer("token-\($0)") }
            let upstreams = identities.map { factory($0, metrics) }
            for upstream in upstreams {
                // Starts connecting (the client connects lazily) and returns at once.
                try? await upstream.waitUntilConnected(timeout: .zero)
            }
            await waitUntil(timeout: .seconds(20)) {
                upstreams.allSatisfy { upstream in
                    guard let client = (upstream as? ClientUpstream)?.client,
                        case .reconnecting = client.connectionState
                    else { return false }
                    return true
                }
            }
            // One warning object for them all, so one line, whenever each connection's watcher reports its failure.
            let shared = Set(
                upstreams.compactMap { ($0 as? ClientUpstream)?.connectWarnings.map(ObjectIdentifier.init) })
            #expect(shared.count == 1)
            // The line is logged by a watcher of the connection's states, after the state the wait above reads: on a
            // loaded machine it comes later.
            await waitUntil(timeout: .seconds(20)) { !Self.warnings(recorder).isEmpty }
            for upstream in upstreams { await upstream.close() }
            let lines = Self.warnings(recorder)
            #expect(lines.count == 1, "\(lines)")
            #expect(lines.first?.contains("cause=connection refused") == true, "\(lines)")
        }
    }

    /// The real executable: its start-up line names the deployment it serves, and a deployment that refuses
    /// connections is said at `warning` (the default log level shows it), in plain words.
    @Test func theGatewayNamesItsDeploymentAndSaysWhenItCannotReachIt() async throws {
        try await withRefusingPort { port in
            let url = "http://127.0.0.1:\(port)"
            let log = try await TestGateway.run(.process, arguments: ["--convex-url", url]) { gateway in
                let answer = try await blocking {
                    try RawConnection.request("GET", "/query/messages:list", port: gateway.port)
                }
                #expect(answer.status == 503)
                await waitUntil { gateway.log.contains("Cannot connect to the Convex deployment") }
                return gateway.log
            }
            let listening = log.split(separator: "\n").first { $0.contains("Gateway listening") } ?? ""
            #expect(listening.contains("convex.url=\(url)"), "\(log)")
            let warnings = log.split(separator: "\n").filter { $0.contains("Cannot connect to the Convex deployment") }
            #expect(warnings.count == 1, "\(log)")
            #expect(warnings.first?.contains("warning") == true, "\(log)")
            #expect(warnings.first?.contains("cause=connection refused") == true, "\(log)")
        }
    }
}
