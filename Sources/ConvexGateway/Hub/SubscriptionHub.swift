import Convex
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Synchronization

/// One upstream subscription per (identity, function, canonical arguments), shared by every SSE stream on it and
/// answering `GET`s while it lives. It is kept warm for `keepWarm` after its last reader leaves or its last `GET`
/// reads it, so a burst of `GET`s or a reconnecting `EventSource` does not resubscribe upstream.
///
/// The decisions are ``HubState``'s (a state machine tested without I/O); this class holds it under a lock, carries
/// out its actions after leaving the lock (rendering, delivering, waking waiters), owns the upstream subscription
/// tasks, and runs the one sweeper that expires idle subscriptions.
package final class SubscriptionHub: Sendable {
    /// What identifies a shared subscription.
    package struct Key: Hashable, Sendable {
        /// An opaque identity key (a per-process id of the caller's credentials, or "" for anonymous callers).
        package var identity: String
        package var function: String
        /// Canonical Convex JSON of the arguments: sorted keys, exact numbers.
        package var canonicalArgs: [UInt8]

        package init(identity: String, function: UdfPath, args: ConvexValue) {
            self.identity = identity
            self.function = function.canonical
            self.canonicalArgs = args.convexJSON()
        }
    }

    /// One subscription of a stream, as it attaches.
    package struct Member: Sendable {
        package var key: Key
        package var args: ConvexValue
        /// The hash of the result the client holds (from its `Last-Event-ID`): not sent again while it is current.
        package var held: ContentHash?

        package init(key: Key, args: ConvexValue, held: ContentHash? = nil) {
            self.key = key
            self.args = args
            self.held = held
        }
    }

    /// Why a stream could not attach: the hub shut down. (A subscription limit refuses a stream before it is
    /// answered, in its first results' wait, never at its attach: ``SubscriptionLimit``.)
    package enum AttachError: Error, Sendable {
        case shuttingDown
    }

    /// The upstream query set of one identity, with the task that reads its transitions.
    struct QuerySet {
        /// Tells this set's transitions from those of an earlier set of the same identity that ended.
        let id: UInt64
        let set: any UpstreamQuerySet
        var task: Task<Void, Never>?
        /// The key of each member, by token: the entry's id (``HubState/Entry/id``).
        var members: [UInt64: Key] = [:]
    }

    /// What wakes a caller whose wait ``HubState`` keeps (by number): a `GET` waiting for a first result, a caller
    /// waiting for an identity's results to reach a timestamp, or a long-poll `GET` waiting for a change.
    enum Wake {
        case firstResult(OneShot<(current: CurrentResult, ts: ConvexTimestamp)?>)
        case timestamp(OneShot<Bool>)
        case change(ChangeWaiter)

        /// Ends the wait with nothing: no result, the timestamp not reached, no change.
        func giveUp() {
            switch self {
            case .firstResult(let wake): wake.end(with: nil)
            case .timestamp(let wake): wake.end(with: false)
            case .change(let waiter): waiter.end(with: nil)
            }
        }
    }

    struct Locked {
        var hub: HubState
        /// Per identity, the query set that holds its entries' upstream subscriptions.
        var querySets: [String: QuerySet] = [:]
        var nextQuerySet: UInt64 = 1
        /// The waits ``hub`` keeps, by number.
        var wakes: [UInt64: Wake] = [:]
        /// The timers of their deadlines, by wait (armed and cancelled by ``hub``'s actions).
        var deadlines: [UInt64: Task<Void, Never>] = [:]
        var nextWait: UInt64 = 1

        /// A number for a new wait.
        mutating func newWait() -> UInt64 {
            defer { nextWait += 1 }
            return nextWait
        }
    }

    let state: Mutex<Locked>
    let clock: GatewayClock
    let metrics: GatewayMetrics
    let logger: Logger
    let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    /// How many threads a change's deliveries to many streams are split between (``deliver(_:_:)``).
    let fanOutThreads: Int

    /// - Parameter maxSubscriptionsPerCaller: the live subscriptions one caller may have made
    ///   (``SubscriptionCaller``); its default is the configuration's
    ///   (``GatewayConfiguration/effectiveMaxSubscriptionsPerCaller``).
    package init(
        keepWarm: Duration,
        maxSubscriptions: Int,
        maxSubscriptionsPerCaller: Int,
        metrics: GatewayMetrics,
        logger: Logger,
        clock: GatewayClock = .continuous,
        fanOutThreads: Int = 1,
        render: @escaping @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    ) {
        let hub = HubState(
            keepWarm: keepWarm, maxSubscriptions: maxSubscriptions, maxSubscriptionsPerCaller: maxSubscriptionsPerCaller
        )
        state = Mutex(Locked(hub: hub))
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.render = render
        self.fanOutThreads = max(1, fanOutThreads)
    }

    package var subscriptionCount: Int { state.withLock { $0.hub.entries.count } }

    /// The hub clock's time (reads are stamped with it).
    package var now: Duration { clock.now }

    // MARK: SSE

    /// Attaches a stream's subscriptions (all of one identity, on `upstream`): the stream gets the current result of
    /// every member at once, all from one snapshot (except those whose `held` hash shows the client has it), then one
    /// delivery per upstream transition that changes any of them, until `detach`. New subscriptions are `caller`'s.
    package func attach(
        _ sink: any EventSink, members: [Member], caller: SubscriptionCaller = .unknown, upstream: any ConvexUpstream
    ) throws(AttachError) {
        let initial = try state.withLock { locked throws(AttachError) -> HubState.Delivery? in
            let (initial, actions) = try locked.hub.attach(sink, members: members, caller: caller, now: clock.now)
            startUpstream(actions, &locked, upstream: upstream)
            return initial
        }
        if let initial { perform([.deliver([(sink, initial)])]) }
    }

    /// Detaches a stream; `members` are the keys of its subscriptions, in the order they were attached.
    package func detach(_ sink: any EventSink, members: [Key]) {
        state.withLock { _ = $0.hub.detach(ObjectIdentifier(sink), members: members, now: clock.now) }
    }

    /// Sinks attached now, over every subscription (streams and long-polls).
    var attachmentCount: Int {
        state.withLock { locked in
            locked.hub.entries.values.reduce(0) { $0 + $1.attachments.count + $1.fanOut.count }
        }
    }

    /// Ends every stream and upstream subscription; later attaches fail with `.shuttingDown`.
    package func shutdown() {
        let actions = state.withLock { locked in
            let actions = locked.hub.shutdown()
            stopUpstream(actions, &locked)
            return actions
        }
        perform(actions)
    }

    // MARK: Keep-warm expiry

    /// Closes the subscriptions idle for the keep-warm period (one sweep).
    package func sweep() {
        let actions = state.withLock { locked in
            let actions = locked.hub.tick(now: clock.now)
            stopUpstream(actions, &locked)
            return actions
        }
        perform(actions)
    }

    /// The one sweeper: sweeps every quarter of the keep-warm period (10 ms to 1 s) until cancelled.
    package func runSweeper() async {
        let keepWarm = state.withLock { $0.hub.table.keepWarm }
        let interval = min(max(keepWarm / 4, .milliseconds(10)), .seconds(1))
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
            } catch {
                return
            }
            sweep()
        }
    }

    // MARK: Carrying out actions

    /// Carries out the actions that happen outside the lock: waking waiters, delivering events, ending streams.
    func perform(_ actions: [HubState.Action]) {
        // Rendered once per result and output mode; a patch once per change and mode, only if a stream reads patches.
        var rendering = DeliveryRenderCache()
        for action in actions {
            switch action {
            case .publish(let publication):
                publication.carryOut()
            case .subscribe, .unsubscribe:
                break  // carried out under the lock
            case .deliver(let deliveries):
                deliver(deliveries)
            case .resume(let waits, let current):
                for case .firstResult(let wake) in self.wakes(waits) { wake.end(with: current) }
            case .reached(let waits, let reached):
                for case .timestamp(let wake) in self.wakes(waits) { wake.end(with: reached) }
            case .giveUp(let waits):
                for wake in self.wakes(waits) { wake.giveUp() }
            case .armDeadline(let wait, let deadline):
                arm(wait, at: deadline)
            case .cancelDeadlines(let waits):
                cancelDeadlines(waits)
            case .fanOut(let fanOut):
                deliver(fanOut, &rendering)
            case .end(let sinks):
                for sink in sinks { sink.end() }
            }
        }
    }

    /// The wakes of the waits numbered `waits`, removed.
    private func wakes(_ waits: [UInt64]) -> [Wake] {
        state.withLock { locked in waits.compactMap { locked.wakes.removeValue(forKey: $0) } }
    }
}
