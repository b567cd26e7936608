import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import Convex

// End-to-end tests of ConvexClient against the embedded local deployment over a real WebSocket on 127.0.0.1.

/// Runs `body` with a deployment on a free port and a client of it; both are always torn down.
func withClientAndDeployment<R: Sendable>(
    adminKey: String? = nil,
    // Generous deadlines: on a loaded machine a socket can take longer than the default 10 s to open, and a call
    // longer than 20 s. No pings of the client's own: a pong can come more than 10 s late there too, and liveness is
    // tested on a test clock (ClientLivenessTests).
    configuration: ConvexClientConfiguration = .init(
        callTimeout: .seconds(60), connectTimeout: .seconds(60), pingInterval: nil),
    clock: ElapsedClock = .continuous,
    _ body: (ConvexClient, LocalDeployment) async throws -> R
) async throws -> R {
    try await withLocalDeployment(.init(port: 0, adminKey: adminKey, clock: clock)) { deployment in
        try await ConvexClient.withClient(deploymentUrl: deployment.url, configuration: configuration) { client in
            try await body(client, deployment)
        }
    }
}

/// A syntactically valid unsigned JWT with these claims (the local deployment does not verify signatures).
func makeJWT(_ claims: String) -> String {
    func b64url(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    return "\(b64url(#"{"alg":"none","typ":"JWT"}"#)).\(b64url(claims)).c2ln"
}

/// Waits until `condition` holds, polling with TestSupport's `eventually`; records an issue at the caller when it gives
/// up after `timeout`.
func eventually(
    _ what: String, timeout: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async rethrows {
    if try await TestSupport.eventually(timeout: timeout, condition) { return }
    Issue.record("Timed out waiting until \(what): gave up after \(timeout)", sourceLocation: sourceLocation)
}

extension ConvexClient {
    /// Upstream queries in the client's query set (white-box check of sharing and removal).
    var upstreamQueryCount: Int { core.state.withLock { $0.sync.queries.count } }
    /// Sockets this client has opened.
    var socketsOpened: UInt32 { core.state.withLock { $0.sync.connectionCount } }
}
