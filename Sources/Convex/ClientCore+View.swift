import ConvexSyncProtocol
import TimeSource

/// Moving the client's view forward on request: ``ConvexClient/waitForView(atLeast:timeout:)``.
extension ClientCore {
    /// A caller waiting for the view to reach `target`.
    struct ViewWaiter {
        let target: ConvexTimestamp
        let reached: OneShot<Void>
    }

    /// Waits until the client's view is at `target` or later, asking the deployment for its latest snapshot while it
    /// is not (five times over its first second, ``ViewAsks``; then it only waits), for at most `timeout`
    /// on the configuration's clock. Returns the view's timestamp then, which is below `target` when the time ran
    /// out, or at once when the view cannot move: the client is closed, or the deployment refused its credentials (it
    /// then waits for new ones).
    func waitForView(atLeast target: ConvexTimestamp, timeout: Duration) async -> ConvexTimestamp {
        let clock = configuration.clock
        let deadline = clock.now + timeout
        var asks = ViewAsks()
        while true {
            let reached = OneShot<Void>()
            let step = asks.next(now: clock.now, deadline: deadline)
            let (view, id, deferred) = state.withLock { l -> (ConvexTimestamp?, UInt64, Deferred?) in
                if l.viewTimestamp >= target || Self.viewIsStuck(l.published) { return (l.viewTimestamp, 0, nil) }
                let id = l.nextID
                l.nextID += 1
                l.viewWaiters[id] = ViewWaiter(target: target, reached: reached)
                return (nil, id, step.ask ? applyLocked(l.sync.refreshView(), &l) : nil)
            }
            if let view { return view }
            deferred?.run(self)
            let timer = Task {
                try? await clock.sleep(until: step.wakeAt)
                reached.complete(())
            }
            await withTaskCancellationHandler {
                await reached.wait()
            } onCancel: {
                reached.complete(())
            }
            timer.cancel()
            let (now, stuck) = state.withLock { l in
                l.viewWaiters[id] = nil
                return (l.viewTimestamp, Self.viewIsStuck(l.published))
            }
            if now >= target || stuck || clock.now >= deadline || Task.isCancelled { return now }
        }
    }

    /// Whether the view cannot move in `state`: closed, or waiting for new credentials after a refusal.
    static func viewIsStuck(_ state: ConnectionState) -> Bool {
        switch state {
        case .closed, .authenticationFailed: true
        default: false
        }
    }

    /// Wakes the waiters whose wait is over (under the lock, after a Transition was applied or the connection's state
    /// changed): the view reached their target, or it cannot move (``viewIsStuck(_:)``).
    func wakeViewWaitersLocked(_ l: inout Locked) {
        guard !l.viewWaiters.isEmpty else { return }
        let stuck = Self.viewIsStuck(l.published)
        for (id, waiter) in l.viewWaiters where stuck || waiter.target <= l.viewTimestamp {
            l.viewWaiters[id] = nil
            waiter.reached.complete(())
        }
    }
}
