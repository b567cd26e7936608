import ConvexValues

extension HubState {
    /// One subscription of one stream.
    struct Attachment {
        var sink: any EventSink
        /// The subscription's index in its stream.
        var member: Int
        /// The hash of the result the client holds (from `Last-Event-ID`) while the entry has no result yet: the
        /// first result is not sent if it is that one.
        var held: ContentHash?
        /// Whether this is its stream's only subscription (a `/subscribe/<function>` stream, or a set of one): such
        /// streams get a change as part of one ``FanOut``. One is kept here only while it has a `held` hash; then it
        /// joins its entry's ``Entry/fanOut``.
        var alone: Bool
    }

    struct AttachmentID: Hashable {
        var sink: ObjectIdentifier
        var member: Int
    }

    /// One live subscription (a function, its arguments and an identity), shared by every reader: its current result,
    /// the streams attached to it and the `GET`s waiting for its first result.
    struct Entry {
        /// Names the entry to the upstream (its member in the identity's query set); a new entry of the same key
        /// has a new id.
        let id: UInt64
        let args: ConvexValue
        /// The caller that made it, charged for it while it lives (``SubscriptionCaller``).
        let owner: SubscriptionCaller
        var current: CurrentResult?
        var version = ResultVersion.zero
        /// The subscriptions of streams of several subscriptions, and those of single-subscription streams that
        /// still wait for a result other than the one they hold (`held`).
        var attachments: [AttachmentID: Attachment] = [:]
        /// The single-subscription streams that take every change, in the order they attached.
        var fanOut = FanOutSinks()
        var waiters: Set<UInt64> = []
        /// When the last reader left; `nil` while streams or waiting `GET`s read it.
        var idleSince: Duration?
        /// What the hot path reads without the hub's lock (the current result's version, once the owner publishes it:
        /// ``Action/publish(_:)``), and the last `GET` read.
        let live: LiveResult
        /// What is made of `current` for its readers (the render stage's; the hub only hands it out).
        private(set) var renderings = ResultRenderings()

        init(id: UInt64, args: ConvexValue, owner: SubscriptionCaller, live: LiveResult) {
            self.id = id
            self.args = args
            self.owner = owner
            self.live = live
        }

        var hasReaders: Bool { !attachments.isEmpty || !fanOut.isEmpty || !waiters.isEmpty }

        /// Member `index` of a stream of `count` subscriptions attaches; `held`: the hash of the result its client
        /// holds. Returns the current result to send it at once, unless there is none or the client holds it.
        mutating func attach(
            _ sink: any EventSink, member index: Int, of count: Int, held: ContentHash?
        ) -> CurrentResult? {
            let waitsForAnother = current == nil ? held : nil
            if count == 1 && waitsForAnother == nil {
                fanOut.append(sink)
            } else {
                attachments[AttachmentID(sink: ObjectIdentifier(sink), member: index)] = Attachment(
                    sink: sink, member: index, held: waitsForAnother, alone: count == 1)
            }
            idleSince = nil
            guard let current, current.hash != held else { return nil }
            return current
        }

        /// A `GET` waits for the first result.
        mutating func wait(_ waiter: UInt64) {
            waiters.insert(waiter)
            idleSince = nil
        }

        /// Member `index` of a stream of `count` subscriptions leaves. Returns whether it was attached.
        mutating func detach(_ stream: ObjectIdentifier, member index: Int, of count: Int) -> Bool {
            attachments.removeValue(forKey: AttachmentID(sink: stream, member: index)) != nil
                || (count == 1 && fanOut.remove(stream))
        }

        /// A transition brings `change` (ignored unless it is for this entry): it becomes the current
        /// result, sent to the streams attached unless they have it, and the waiting `GET`s wake with it.
        mutating func receive(
            _ change: EntryResult, wallMilliseconds: UInt64, now: Duration, into batch: inout TransitionBatch
        ) {
            guard change.entryID == id else { return }
            let woken = waiters
            waiters = []
            if let result = update(to: change, wallMilliseconds: wallMilliseconds) {
                batch.publish(version, of: live)
                route(result, into: &batch)
            }
            markIdleIfUnread(now: now)
            batch.resume(woken, with: current!)
        }

        /// Takes `change` as the current result (its version grows, and follows `wallMilliseconds`, the wall clock,
        /// across restarts and replicas). Returns the new result, `nil` when `change` holds the current one.
        mutating func update(to change: EntryResult, wallMilliseconds: UInt64) -> NewResult? {
            if let current, current.hash == change.hash { return nil }
            let previous = current
            version = version.next(wallMilliseconds: wallMilliseconds)
            let new = CurrentResult(
                id: ResumeID(version: version, held: [change.hash]).text, version: version, hash: change.hash,
                result: change.result)
            current = new
            renderings = ResultRenderings()
            return NewResult(key: change.key, current: new, previous: previous, renderings: renderings)
        }

        /// Sends `result`, just updated, to every stream attached: one fan-out for the single-subscription streams,
        /// and a change in each delivery of a stream of several. A stream that held a hash gets the result unless it
        /// is the one it holds, and a single-subscription one joins the fan-out: after this change if it holds it,
        /// with it otherwise.
        mutating func route(_ result: NewResult, into batch: inout TransitionBatch) {
            let hash = result.current.hash
            var shared: [Delivery.MemberResult]?
            var joinAfter: [any EventSink] = []
            for (id, attachment) in attachments {
                if let held = attachment.held {
                    if attachment.alone {
                        attachments[id] = nil
                        if held == hash {
                            joinAfter.append(attachment.sink)
                        } else {
                            fanOut.append(attachment.sink)
                        }
                        continue
                    }
                    attachments[id]?.held = nil
                    if held == hash {
                        batch.alreadyHeld(member: attachment.member, of: id.sink)
                        continue
                    }
                }
                batch.deliver(
                    Delivery.MemberResult(member: attachment.member, result: result), to: attachment.sink,
                    stream: id.sink, shared: &shared, expected: attachments.count)
            }
            if !fanOut.isEmpty { batch.fanOut(result, to: fanOut.slots) }
            for sink in joinAfter { fanOut.append(sink) }
        }

        /// Marks the entry idle from `now` when nobody reads it and it is not idle already.
        mutating func markIdleIfUnread(now: Duration) {
            if !hasReaders && idleSince == nil { idleSince = now }
        }

        /// The entry ends (its upstream ended, or the hub shut down): its waiting `GET`s get no result, and every
        /// stream attached to it ends (each once).
        func ending() -> [Action] {
            var actions: [Action] = []
            if !waiters.isEmpty { actions.append(.resume(waiters: Array(waiters), with: nil)) }
            var seen: Set<ObjectIdentifier> = []
            let sinks = (fanOut.sinks + attachments.values.map(\.sink)).filter {
                seen.insert(ObjectIdentifier($0)).inserted
            }
            if !sinks.isEmpty { actions.append(.end(sinks)) }
            return actions
        }
    }
}
