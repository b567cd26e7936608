import Convex
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization

/// The deployment's function spec as the gateway last fetched it: fetched once at start, refreshed on demand (at
/// most once per ``FunctionSpecSource/minimumRefreshInterval``). While no spec has been fetched, arguments pass
/// through unchanged.
package final class FunctionSpecStore: Sendable {
    package let source: FunctionSpecSource
    private let logger: Logger

    private struct State {
        var spec: FunctionSpec?
        /// The gateway clock's time of the last fetch.
        var lastAttempt: Duration?
        var inFlight: Task<FunctionSpec?, Never>?
        var firstFetchDone = false
    }

    private let state = Mutex(State())
    private let fetchedCount = Atomic<UInt64>(0)

    private let clock: GatewayClock

    package init(source: FunctionSpecSource, logger: Logger, clock: GatewayClock = .continuous) {
        self.clock = clock
        self.source = source
        self.logger = logger
    }

    /// The spec last fetched, if any.
    package var current: FunctionSpec? { state.withLock { $0.spec } }

    /// Changes whenever a newly fetched spec replaces the current one, so that anything derived from the spec (the hot
    /// `GET` path's remembered arguments) can tell it is stale.
    package var fetchCount: UInt64 { fetchedCount.load(ordering: .acquiring) }

    /// Whether the first fetch has not finished yet.
    package var firstFetchPending: Bool { !state.withLock { $0.firstFetchDone } }

    /// Starts the first fetch.
    package func start() {
        Task { await self.refresh(force: true) }
    }

    /// Waits for the first fetch (starting it if needed).
    package func waitForFirstFetch() async {
        if firstFetchPending { await refresh(force: true) }
    }

    /// Fetches the spec again unless a fetch is running (then waits for it) or the last one started less than the
    /// minimum refresh interval ago (then returns the current spec).
    @discardableResult
    package func refresh(force: Bool = false) async -> FunctionSpec? {
        let task: Task<FunctionSpec?, Never>? = state.withLock { state in
            if let running = state.inFlight { return running }
            let now = clock.now
            if !force, let last = state.lastAttempt, now - last < source.minimumRefreshInterval {
                return nil
            }
            state.lastAttempt = now
            let task = Task { await self.fetchAndStore() }
            state.inFlight = task
            return task
        }
        guard let task else { return current }
        return await task.value
    }

    /// The pauses before the retries of a first fetch that failed: one lost connection while the deployment starts, or
    /// under load, must not leave typed inputs off until a later refresh. Requests that need the spec wait for them.
    static let firstFetchRetryDelays: [Duration] = [.milliseconds(250), .seconds(1)]

    private func fetchAndStore() async -> FunctionSpec? {
        var fetched: FunctionSpec?
        var retries = firstFetchPending ? Self.firstFetchRetryDelays[...] : []
        while true {
            do {
                fetched = try await Self.fetch(source)
                logger.debug(
                    "function spec fetched", metadata: ["gateway.functions": "\(fetched?.functions.count ?? 0)"])
                break
            } catch {
                if let delay = retries.popFirst(), (try? await clock.sleep(for: delay)) != nil {
                    logger.debug("function spec fetch failed; trying again", metadata: ["error": "\(error)"])
                    continue
                }
                logger.notice(
                    "function spec unavailable; arguments pass through unchanged", metadata: ["error": "\(error)"])
                break
            }
        }
        return state.withLock { state in
            if let fetched {
                state.spec = fetched
                fetchedCount.add(1, ordering: .releasing)
            }
            state.inFlight = nil
            state.firstFetchDone = true
            return state.spec
        }
    }

    /// The spec, by the Convex client's admin call (`POST <deployment>/api/function_spec` with the admin key).
    static func fetch(_ source: FunctionSpecSource) async throws(FunctionSpecError) -> FunctionSpec {
        try await ConvexAdminClient(deploymentURL: source.deploymentURL, adminKey: source.adminKey.revealed)
            .functionSpec(timeout: source.fetchTimeout)
    }
}
