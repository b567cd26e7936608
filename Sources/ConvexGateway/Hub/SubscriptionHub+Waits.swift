import ConvexSyncProtocol

/// The owner's side of the hub's waits (``HubState/Waits``): a timer per deadline, armed and cancelled as the state's
/// actions say, and the one way a wait ends early, ``endWait(_:)``, for its deadline and for a caller that left.
extension SubscriptionHub {
    /// Arms the deadline of `wait`, unless the wait ended already (its answer came before this action was carried
    /// out): at `deadline`, ``endWait(_:)``.
    func arm(_ wait: UInt64, at deadline: Duration) {
        state.withLock { locked in
            guard locked.hub.waits.open[wait] != nil else { return }
            locked.deadlines[wait] = clock.expiring(at: deadline) { [weak self] in self?.endWait(wait) }
        }
    }

    /// Cancels the deadlines of `waits`, after leaving the lock: cancelling a timer runs its sleep's cancellation
    /// handler, which takes the clock's lock.
    func cancelDeadlines(_ waits: [UInt64]) {
        let timers = state.withLock { locked in waits.compactMap { locked.deadlines.removeValue(forKey: $0) } }
        for timer in timers { timer.cancel() }
    }

    /// Ends `wait` with nothing if it still waits (its deadline came, or its caller left): ``HubState/waitEnded(_:now:)``.
    func endWait(_ wait: UInt64) {
        perform(state.withLock { $0.hub.waitEnded(wait, now: clock.now) })
    }

    /// Awaits `outcome`, how `wait` (which the hub keeps) ends; the calling task's cancellation (its client left) ends
    /// the wait with nothing.
    func awaiting<Value: Sendable>(_ wait: UInt64, _ outcome: () async -> Value) async -> Value {
        await withTaskCancellationHandler {
            await outcome()
        } onCancel: {
            endWait(wait)
        }
    }

    /// Waits until the results the hub serves for `identity` hold at `target` or later, or `deadline` (the hub clock's
    /// time) comes. Returns whether `target` was reached.
    func awaitTimestamp(_ target: ConvexTimestamp, identity: String, until deadline: Duration) async -> Bool {
        let wake = OneShot<Bool>()
        let (wait, start) = state.withLock { locked -> (UInt64, HubState.TimestampWaitStart) in
            let wait = locked.newWait()
            let subscribed = locked.querySets[identity] != nil
            let start = locked.hub.waitForTimestamp(
                wait, identity: identity, target: target, subscribed: subscribed, deadline: deadline)
            if case .waiting = start { locked.wakes[wait] = .timestamp(wake) }
            return (wait, start)
        }
        switch start {
        case .answered(let reached):
            return reached
        case .waiting(let actions):
            perform(actions)
            return await awaiting(wait) { await wake.value() }
        }
    }
}

extension GatewayClock {
    /// Runs `expire` once the clock reaches `deadline`, unless the returned task is cancelled first: the timer of a
    /// hub wait's deadline. Armed once the wait is registered, so that an early deadline (a short timeout, a busy
    /// machine, a test clock already past it) still ends the wait.
    func expiring(at deadline: Duration, _ expire: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        Task { [self] in
            guard (try? await sleep(until: deadline)) != nil, !Task.isCancelled else { return }
            expire()
        }
    }
}
