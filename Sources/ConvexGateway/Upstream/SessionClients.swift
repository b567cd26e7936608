import Convex
import ConvexSyncProtocol
import ConvexValues
import Logging
import Synchronization
import TimeSource

/// The connections of pages' sync sessions for one caller identity (`POST /mutations`): a ``ConvexClient`` per session
/// id, opened with that id on first use, so the deployment records the session's mutations by request id and runs a
/// resent one once, whichever replica resends it and however many connections the session had meanwhile.
///
/// A session's connection is closed once it has been idle for `idleTimeout`; at most `capacity` are open at once, and a
/// new session takes the place of the least recently used idle one (or is refused while every one is busy). A resend
/// of a mutation still running here waits for the same run instead of sending it again.
final class SessionClients: Sendable {
    typealias Outcome = Result<(value: ConvexValue, ts: ConvexTimestamp?), ConvexClientError>

    private struct Entry {
        var client: ConvexClient
        var lastUsed: Duration
        /// The mutations running on the session, by request id.
        var running: [UInt32: Task<Outcome, Never>] = [:]
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let open: @Sendable (String) throws(ConvexClientError) -> ConvexClient
    private let clock: ElapsedClock
    let capacity: Int
    let idleTimeout: Duration

    /// Session connections one identity holds at most (every anonymous page shares the anonymous identity's).
    static let defaultCapacity = 256
    /// How long a session's connection stays open after its last mutation: a page's next ones reuse it.
    static let defaultIdleTimeout = Duration.seconds(30)

    /// - Parameter open: a new client of the identity whose configuration names the given session id.
    init(
        capacity: Int, idleTimeout: Duration, clock: ElapsedClock,
        open: @escaping @Sendable (String) throws(ConvexClientError) -> ConvexClient
    ) {
        self.capacity = capacity
        self.idleTimeout = idleTimeout
        self.clock = clock
        self.open = open
    }

    /// Session connections open now.
    var count: Int { entries.withLock { $0.count } }

    /// Runs `function` as `request` on its session's connection, or waits for the run under way of the same request.
    /// Returns `nil` when every session connection is busy.
    func mutation(_ function: String, args: [String: ConvexValue], as request: SessionRequest, timeout: Duration)
        async -> Outcome?
    {
        let (started, closing) = start(function, args: args, as: request, timeout: timeout)
        for client in closing { await client.close() }
        let run: Task<Outcome, Never>
        switch started {
        case .busy: return nil
        case .failed(let error): return .failure(error)
        case .running(let task): run = task
        }
        let outcome = await run.value
        entries.withLock { entries in
            guard entries[request.session] != nil else { return }
            entries[request.session]?.lastUsed = clock.now
            // A later resend starts a new run; the deployment answers it from its record.
            entries[request.session]?.running[request.requestId] = nil
        }
        return outcome
    }

    /// How a mutation's run began: under way (new, or the one a resend joins), refused for room, or failed to open.
    private enum Start {
        case running(Task<Outcome, Never>)
        case busy
        case failed(ConvexClientError)
    }

    /// The run of `request` (a new one, or the one under way), and the idle connections to close first.
    private func start(_ function: String, args: [String: ConvexValue], as request: SessionRequest, timeout: Duration)
        -> (Start, [ConvexClient])
    {
        let now = clock.now
        return entries.withLock { entries -> (Start, [ConvexClient]) in
            var closing = Self.takeIdle(&entries, olderThan: now - idleTimeout)
            if entries[request.session] == nil {
                if entries.count >= capacity {
                    guard let oldest = Self.leastRecentlyUsedIdle(entries) else { return (.busy, closing) }
                    closing.append(entries.removeValue(forKey: oldest)!.client)
                }
                do throws(ConvexClientError) {
                    entries[request.session] = Entry(client: try open(request.session), lastUsed: now)
                } catch {
                    return (.failed(error), closing)
                }
            }
            guard var entry = entries[request.session] else { return (.busy, closing) }
            entry.lastUsed = now
            if let running = entry.running[request.requestId] {
                entries[request.session] = entry
                return (.running(running), closing)
            }
            let client = entry.client
            // The run belongs to the session, not to the request that started it: a page that hangs up and resends
            // joins it, and the deployment's record gets its result either way.
            let run = Task<Outcome, Never> {
                do throws(ConvexClientError) {
                    let answer = try await client.mutationStamped(
                        function, with: args, timeout: timeout, requestId: request.requestId)
                    return .success(answer)
                } catch {
                    return .failure(error)
                }
            }
            entry.running[request.requestId] = run
            entries[request.session] = entry
            return (.running(run), closing)
        }
    }

    private static func takeIdle(_ entries: inout [String: Entry], olderThan cutoff: Duration) -> [ConvexClient] {
        let idle = entries.filter { $0.value.running.isEmpty && $0.value.lastUsed < cutoff }.map(\.key)
        return idle.compactMap { entries.removeValue(forKey: $0)?.client }
    }

    private static func leastRecentlyUsedIdle(_ entries: [String: Entry]) -> String? {
        entries.filter { $0.value.running.isEmpty }.min { $0.value.lastUsed < $1.value.lastUsed }?.key
    }

    /// Closes every session connection.
    func closeAll() async {
        let all = entries.withLock { entries in
            defer { entries = [:] }
            return entries.values.map(\.client)
        }
        for client in all { await client.close() }
    }
}
