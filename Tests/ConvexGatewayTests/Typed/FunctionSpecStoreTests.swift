import ConvexGateway
import ConvexLocal
import ConvexSyncProtocol
import Foundation
import Logging
import TestSupport
import Testing

/// The first fetch of the function spec survives one failure: the deployment is not listening yet when the gateway
/// asks (as a connection lost under load would fail it), and a retry a moment later gets the spec, so typed inputs are
/// on from the first request that waits for it.
@Suite(.timeLimit(.minutes(5)))
struct FunctionSpecStoreTests {
    @Test func aFirstFetchThatFailsIsTriedAgain() async throws {
        // The port is held (bound, not listening: refused at once) until the deployment takes it, and is below the
        // ephemeral range, so none of the parallel run's many outgoing connections can take it in between.
        let (port, store, first) = try await withRefusingPort { port in
            let source = FunctionSpecSource(
                deploymentURL: "http://127.0.0.1:\(port)",
                adminKey: try Secret("spec-retry-key", source: "test admin key"), fetchTimeout: .seconds(30))
            let store = FunctionSpecStore(source: source, logger: quietLogger)
            let first = Task { await store.refresh(force: true) }
            // Real time: lets the first fetch meet the refusing port; whether it did or not, the store must end with
            // the spec.
            try await Task.sleep(for: .milliseconds(50))
            return (port, store, first)
        }
        let typed = try UdfPath(parsing: "conformance:typed")
        try await withLocalDeployment(.init(port: port, adminKey: "spec-retry-key"), logger: quietLogger) { _ in
            let fetched = await first.value
            #expect(fetched?.publicFunction(typed) != nil)
            #expect(store.current != nil)
        }
    }
}
