import ConvexSyncProtocol
import ConvexValues

/// The recorded results of sync sessions' mutations, so that a mutation resent with the same request id returns its
/// first result instead of running again: a plain value with no lock and no clock (the time is passed in), which
/// ``MutationResultCache`` holds under its lock.
///
/// **What a resend gets.** A result is recorded under its ``Holder``, the session id with the caller's
/// ``InertIdentity``, and its request id, beside the ``Call`` that made it (the canonical function path and the Convex
/// JSON bytes of the arguments). It answers only a resend from the same holder with the same request id and the same
/// call: a socket that presents another session's id as another caller, or the same request id with another path or
/// other arguments, finds nothing and runs as new, unrecorded (the first record of a request id stands, so such a run
/// cannot push it out). Only successful mutations are recorded, as in Convex, whose record of a session's request is
/// written in the mutation's own transaction: a failed mutation committed nothing, so its resend runs again.
///
/// **Bounds, in bytes.** An entry counts the Convex JSON of its result (kept as those bytes, decoded again for a
/// resend) and of its arguments, its log lines, its path and key, and ``entryOverhead`` for the bookkeeping around
/// them; a holder counts ``holderOverhead`` while it holds any.
/// - One holder keeps at most ``Limits/bytesPerHolder``: a store past it evicts the holder's own oldest results, and a
///   result larger than that share is not recorded.
/// - All holders together keep at most ``Limits/totalBytes``. A store past it evicts, oldest first, results older than
///   ``Limits/protectedFor`` (of any holder); then, if that is not enough, the storing holder's own oldest results; and
///   if even that is not enough, the new result is not recorded.
///
/// So no result younger than `protectedFor` is ever evicted by another holder's stores, however many there are: a flood
/// from one session stays within its share and evicts only its own results, and a flood from many sessions fills the
/// total and then goes unrecorded until the results before it are `protectedFor` old. A client resends what it has
/// no answer for when it reconnects, within seconds, which the window covers.
struct MutationResults: Sendable {
    /// The byte bounds and the protection window.
    struct Limits: Sendable, Hashable {
        /// All recorded results together. Default 64 MiB.
        var totalBytes = 64 << 20
        /// One session's (under one identity) results. Default 4 MiB: a thousand in-flight mutations with 3.5 KiB of
        /// arguments and result each.
        var bytesPerHolder = 4 << 20
        /// How long a result is safe from other sessions' stores. Default 60 s.
        var protectedFor: Duration = .seconds(60)
    }

    /// Whose results: a sync session under one caller. Also the unit of the per-session share.
    struct Holder: Sendable, Hashable {
        var sessionId: String
        var caller: InertIdentity
    }

    /// What a resend must repeat to get the recorded result: the canonical function path and the Convex JSON of the
    /// arguments.
    struct Call: Sendable, Hashable {
        var path: String
        var args: [UInt8]

        init(path: String, args: [UInt8]) {
            self.path = path
            self.args = args
        }

        init(_ request: ClientMessage.FunctionRequest) {
            self.init(
                path: UdfPath.canonicalize(request.udfPath) ?? request.udfPath,
                args: ConvexValue.object(request.args).convexJSON())
        }
    }

    /// What is kept of a successful response: its value as Convex JSON bytes, its commit timestamp and log lines.
    struct Record: Sendable {
        var value: [UInt8]
        var ts: ConvexTimestamp?
        var logLines: [String]

        init(value: [UInt8], ts: ConvexTimestamp?, logLines: [String]) {
            self.value = value
            self.ts = ts
            self.logLines = logLines
        }

        /// `nil` for a failed mutation, which is not recorded.
        init?(_ response: ServerMessage.MutationResponse) {
            guard case .success(let value) = response.result else { return nil }
            self.init(value: value.convexJSON(), ts: response.ts, logLines: response.logLines)
        }

        /// The response again; `nil` only if the bytes do not read back, which the Convex JSON writer rules out.
        func response(requestId: UInt32) -> ServerMessage.MutationResponse? {
            guard let value = try? ConvexValue(envelopeJSON: self.value) else { return nil }
            return ServerMessage.MutationResponse(
                requestId: requestId, result: .success(value), ts: ts, logLines: logLines)
        }
    }

    /// Bytes counted per entry beyond its contents: the entry, its slot in its holder's table, its place in the two
    /// orders and the allocations of its byte arrays. Measured with the resident size of 200,000 small entries, as
    /// is ``holderOverhead``: together they count a little more than the memory taken.
    static let entryOverhead = 320
    /// Bytes counted per holder while it holds results: its key and slot in the table of holders, its own table and
    /// order.
    static let holderOverhead = 384

    private struct Entry: Sendable {
        var call: Call
        var record: Record
        var bytes: Int
        var stored: Duration
        var sequence: UInt64
    }

    /// One holder's results, with their order of arrival (stale places skipped, see ``Arrivals``).
    private struct Held: Sendable {
        var entries: [UInt32: Entry] = [:]
        var order = Arrivals<UInt32>()
        var bytes = 0
    }

    private struct Place: Sendable {
        var holder: Holder
        var requestId: UInt32
    }

    let limits: Limits
    private var holders: [Holder: Held] = [:]
    /// Every entry in order of arrival, for the eviction of old results of any holder.
    private var order = Arrivals<Place>()
    private var nextSequence: UInt64 = 0
    /// The bytes of every recorded result.
    private(set) var bytes = 0
    /// The number of recorded results.
    private(set) var count = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// The bytes of one holder's results.
    func bytes(of holder: Holder) -> Int { holders[holder]?.bytes ?? 0 }

    /// The recorded response of `holder`'s `requestId`, if it was made by the same `call`.
    func lookup(_ holder: Holder, requestId: UInt32, call: Call) -> ServerMessage.MutationResponse? {
        guard let entry = holders[holder]?.entries[requestId], entry.call == call else { return nil }
        return entry.record.response(requestId: requestId)
    }

    /// Records a response at `now` within the bounds (see the type's documentation). The first record of a holder's
    /// request id stands: another call with that id (a client reusing it, or a socket presenting the session's id)
    /// runs unrecorded and cannot push the first out.
    /// - Returns: whether it was recorded.
    @discardableResult
    mutating func store(_ holder: Holder, requestId: UInt32, call: Call, record: Record, now: Duration) -> Bool {
        guard holders[holder]?.entries[requestId] == nil else { return false }
        let size = Self.size(holder, call: call, record: record)
        // What the holder holds once it has the new result alone: its own overhead and the result.
        let alone = Self.holderOverhead + size
        guard alone <= limits.bytesPerHolder, alone <= limits.totalBytes else { return false }
        while charge(of: holder) + size > limits.bytesPerHolder, evictOldest(of: holder) {}
        while total(adding: size, to: holder) > limits.totalBytes, evictOldestUnprotected(now: now) {}
        if total(adding: size, to: holder) > limits.totalBytes {
            guard bytes - bytes(of: holder) + alone <= limits.totalBytes else { return false }
            while total(adding: size, to: holder) > limits.totalBytes, evictOldest(of: holder) {}
        }
        let sequence = nextSequence
        nextSequence += 1
        var held = holders.removeValue(forKey: holder) ?? Held()
        if held.entries.isEmpty {
            held.bytes = Self.holderOverhead
            bytes += Self.holderOverhead
        }
        held.entries[requestId] = Entry(call: call, record: record, bytes: size, stored: now, sequence: sequence)
        held.order.append(requestId, sequence: sequence)
        held.bytes += size
        holders[holder] = held
        order.append(Place(holder: holder, requestId: requestId), sequence: sequence)
        bytes += size
        count += 1
        return true
    }

    /// The holder's bytes, or the overhead it will cost when it holds nothing yet.
    private func charge(of holder: Holder) -> Int { holders[holder]?.bytes ?? Self.holderOverhead }

    /// The bytes of all once the holder has a result of `size` more.
    private func total(adding size: Int, to holder: Holder) -> Int {
        bytes + size + (holders[holder] == nil ? Self.holderOverhead : 0)
    }

    /// An entry's bytes: see the type's documentation.
    static func size(_ holder: Holder, call: Call, record: Record) -> Int {
        let logBytes = record.logLines.reduce(0) { $0 + $1.utf8.count }
        return record.value.count + call.args.count + call.path.utf8.count + logBytes + holder.sessionId.utf8.count
            + holder.caller.keyBytes + entryOverhead
    }

    private mutating func remove(_ holder: Holder, requestId: UInt32) {
        // Taken out of the table while it changes, so that its storage is not shared (and copied) meanwhile.
        guard var held = holders.removeValue(forKey: holder) else { return }
        if held.entries[requestId] != nil {
            take(requestId, from: &held)
            Self.compact(&held)
        }
        put(held, as: holder)
    }

    /// Evicts the holder's oldest result; false if it holds none.
    private mutating func evictOldest(of holder: Holder) -> Bool {
        guard var held = holders.removeValue(forKey: holder) else { return false }
        var evicted = false
        while !evicted, let (requestId, sequence) = held.order.removeFirst() {
            if held.entries[requestId]?.sequence == sequence {
                take(requestId, from: &held)
                evicted = true
            }
        }
        put(held, as: holder)
        return evicted
    }

    /// Evicts the oldest result of any holder if it is at least ``Limits/protectedFor`` old; false if none is.
    private mutating func evictOldestUnprotected(now: Duration) -> Bool {
        while let (place, sequence) = order.first {
            guard let entry = holders[place.holder]?.entries[place.requestId], entry.sequence == sequence else {
                _ = order.removeFirst()
                continue
            }
            guard now - entry.stored >= limits.protectedFor else { return false }
            _ = order.removeFirst()
            remove(place.holder, requestId: place.requestId)
            return true
        }
        return false
    }

    private mutating func take(_ requestId: UInt32, from held: inout Held) {
        guard let entry = held.entries.removeValue(forKey: requestId) else { return }
        held.bytes -= entry.bytes
        bytes -= entry.bytes
        count -= 1
    }

    /// Puts a holder back in the table unless it holds nothing (then its overhead goes too), and drops the stale
    /// places of the order of all.
    private mutating func put(_ held: Held, as holder: Holder) {
        if held.entries.isEmpty {
            bytes -= held.bytes
        } else {
            holders[holder] = held
        }
        let holders = self.holders
        order.compact(live: count) { holders[$0.holder]?.entries[$0.requestId]?.sequence == $1 }
    }

    private static func compact(_ held: inout Held) {
        let entries = held.entries
        held.order.compact(live: entries.count) { entries[$0]?.sequence == $1 }
    }
}

/// Places in order of arrival, each with the sequence number of the entry it was made for. An entry removed out of
/// order leaves its place behind (stale: its sequence no longer matches); readers skip stale places, and
/// ``compact(live:_:)`` drops them once they outnumber the live ones, so the order never holds more than about twice
/// its entries.
private struct Arrivals<Element: Sendable>: Sendable {
    private var places: [(element: Element, sequence: UInt64)] = []
    private var head = 0

    var first: (Element, UInt64)? { head < places.count ? (places[head].element, places[head].sequence) : nil }

    mutating func append(_ element: Element, sequence: UInt64) {
        places.append((element, sequence))
    }

    mutating func removeFirst() -> (Element, UInt64)? {
        guard let first else { return nil }
        head += 1
        if head == places.count {
            places.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64, head * 2 > places.count {
            // The places taken out go once they are half the array: amortised, and never more than the rest.
            places.removeFirst(head)
            head = 0
        }
        return first
    }

    /// Drops the stale places once they outnumber the `live` ones (plus some slack, so that a small order is not
    /// rebuilt at every removal): a rebuild of n places comes after at least n/2 removals, which keeps it amortised.
    mutating func compact(live: Int, _ isLive: (Element, UInt64) -> Bool) {
        guard places.count - head > 2 * live + 64 else { return }
        places = places[head...].filter { isLive($0.element, $0.sequence) }
        head = 0
    }
}
