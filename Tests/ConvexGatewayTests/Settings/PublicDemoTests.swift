import Foundation
import TestSupport
import Testing

/// The embedded deployment's demo functions take calls from anyone: the real `convex-gateway` refuses to serve them on
/// an address other than loopback (the container's `0.0.0.0`) unless `--public-demo` says that is meant.
@Suite("The open demo deployment is not published by accident", .timeLimit(.minutes(5)))
struct PublicDemoTests {
    @Test(
        "without a deployment URL, on an address other than loopback, the gateway exits naming every way out",
        arguments: [
            (["--host", "0.0.0.0"], [:]),
            ([], ["GATEWAY_HOST": "::"]),
            (["--host", "10.1.2.3"], ["GATEWAY_PUBLIC_DEMO": "false"]),
            (["--host", "::ffff:10.0.0.1"], [:]),
        ] as [([String], [String: String])])
    func refused(arguments: [String], environment: [String: String]) async throws {
        let (status, _, errors) = try await SettingsEndToEndTests.run(arguments, environment: environment)
        #expect(status == 64, "\(errors)")
        #expect(errors.hasPrefix("Error: Without --convex-url/CONVEX_URL the gateway serves the embedded demo"))
        for way in ["--convex-url", "CONVEX_URL=", "127.0.0.1", "--public-demo true", "GATEWAY_PUBLIC_DEMO=true"] {
            #expect(errors.contains(way), "the message names \(way): \(errors)")
        }
        // Refused before anything starts: no deployment, no port.
        #expect(!errors.contains("embedded local deployment with demo functions"), "\(errors)")
        #expect(!errors.contains("http.port="), "\(errors)")
    }

    @Test("with GATEWAY_PUBLIC_DEMO=true it serves the demo on 0.0.0.0")
    func publishedOnPurpose() async throws {
        try await TestGateway.run(.process, environment: ["GATEWAY_HOST": "0.0.0.0", "GATEWAY_PUBLIC_DEMO": "true"]) {
            gateway in
            #expect(gateway.log.contains("http.host=0.0.0.0"), "\(gateway.log)")
            let health = try await gateway.get("/healthz")
            #expect(health.status == 200)
            let page = try await gateway.get("/")
            #expect(page.status == 200, "the demo page")
        }
    }

    @Test(
        "on a loopback address the demo needs no setting", arguments: [["--host", "127.0.0.2"], ["--host", "::1"]])
    func loopbackNeedsNothing(arguments: [String]) async throws {
        let log = try await TestGateway.run(.process, arguments: arguments) { gateway in gateway.log }
        #expect(log.contains("Gateway listening"), "\(log)")
        #expect(log.contains("convex.deployment=embedded"), "\(log)")
    }
}
