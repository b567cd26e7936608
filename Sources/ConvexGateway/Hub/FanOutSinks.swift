/// The streams one entry's changes fan out to (its streams whose only subscription it is), in the order they
/// attached, which is the order their connections were accepted.
///
/// A change is sent to them in that order: the kernel's per-socket structures (and the streams' own objects) were
/// allocated in that order, so a fan-out walks memory forwards instead of in a hash table's order, which costs less
/// CPU per event sent (docs/benchmark-history.md, "Fan-out in the order streams attached"). Keeping the list also spares each
/// change a walk of the entry's attachments under the hub's lock.
///
/// A stream that leaves leaves a hole, so the others keep their order and leaving costs no shifting; the holes are
/// squeezed out once they are half the slots. A ``HubState/FanOut`` takes the slots as they are, sharing their storage,
/// so the first stream to come or go while a change is still being sent makes the list copy its slots (once per
/// change, under the hub's lock: ~400 KB and a retain per stream at 10,000 streams).
struct FanOutSinks {
    /// In attach order; `nil` where a stream left.
    private(set) var slots: [(any EventSink)?] = []
    private var positions: [ObjectIdentifier: Int] = [:]

    /// The streams in the list.
    var count: Int { positions.count }
    var isEmpty: Bool { positions.isEmpty }

    /// The streams, in attach order, without the holes.
    var sinks: [any EventSink] { slots.compactMap { $0 } }

    func contains(_ sink: ObjectIdentifier) -> Bool { positions[sink] != nil }

    /// Adds a stream at the end (once: a stream already in the list stays where it is).
    mutating func append(_ sink: any EventSink) {
        let id = ObjectIdentifier(sink)
        guard positions[id] == nil else { return }
        positions[id] = slots.count
        slots.append(sink)
    }

    /// Takes a stream out. Returns whether it was in the list.
    @discardableResult
    mutating func remove(_ sink: ObjectIdentifier) -> Bool {
        guard let position = positions.removeValue(forKey: sink) else { return false }
        slots[position] = nil
        if positions.isEmpty {
            slots = []
        } else if slots.count >= Self.smallestSqueezed && positions.count * 2 < slots.count {
            squeeze()
        }
        return true
    }

    /// Lists below this many slots keep their holes (squeezing them would cost more than walking them).
    static let smallestSqueezed = 64

    private mutating func squeeze() {
        slots = slots.filter { $0 != nil }
        for (position, sink) in slots.enumerated() { positions[ObjectIdentifier(sink!)] = position }
    }
}
