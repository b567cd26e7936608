import ConvexValues
import Dispatch
import Synchronization

extension SubscriptionHub {
    /// Streams below this many are delivered to by the delivering thread alone.
    static let streamsPerFanOutSlice = 256
    /// How many streams of a fan-out a thread takes at a time.
    static let streamsPerRun = 32

    /// Delivers one change to every stream whose only subscription it is (``HubState/FanOut``), in the order they
    /// attached (``FanOutSinks``).
    ///
    /// One transition per output mode and patch choice (a handful) is shared by every stream. A delivery to an idle
    /// stream is a send to its socket made by the delivering thread (MicroHTTPD's direct writes), so the streams are
    /// split between threads (``splitBetweenThreads(_:_:)``). The transition of the first stream's mode is made before
    /// the sends start; a stream in another mode is set aside by its thread and served after them, once its mode's
    /// transition is made (rendering is not shared between threads).
    func deliver(_ fanOut: HubState.FanOut, _ rendering: inout DeliveryRenderCache) {
        let sinks = fanOut.sinks
        guard let first = sinks.lazy.compactMap({ $0 }).first else { return }
        let mode = Mode(format: first.format, patches: first.wantsPatches)
        let shared = transition(fanOut.delivery, format: mode.format, patches: mode.patches, &rendering)
        let setAside = Mutex<[Int]>([])
        splitBetweenThreads(sinks.count) { nextRun in
            var others: [Int] = []
            while let run = nextRun() {
                for index in run {
                    guard let sink = sinks[index] else { continue }
                    if sink.format == mode.format && sink.wantsPatches == mode.patches {
                        sink.deliver(shared)
                    } else {
                        others.append(index)
                    }
                }
            }
            if !others.isEmpty { setAside.withLock { $0 += others } }
        }
        var made: [Mode: StreamTransition] = [:]
        for index in setAside.withLock({ $0 }).sorted() {
            guard let sink = sinks[index] else { continue }
            let other = Mode(format: sink.format, patches: sink.wantsPatches)
            if made[other] == nil {
                made[other] = transition(fanOut.delivery, format: other.format, patches: other.patches, &rendering)
            }
            sink.deliver(made[other]!)
        }
    }

    /// Delivers each stream its own delivery (streams of several subscriptions; one delivery per stream, as one
    /// transition makes them), split between the threads as a fan-out is. Each thread renders with its own
    /// ``DeliveryRenderCache`` (a result's body is rendered once either way: the hub keeps it).
    func deliver(_ deliveries: [(sink: any EventSink, delivery: HubState.Delivery)]) {
        assert(
            Set(deliveries.map { ObjectIdentifier($0.sink) }).count == deliveries.count,
            "a stream's deliveries would race each other")
        splitBetweenThreads(deliveries.count) { nextRun in
            var rendering = DeliveryRenderCache()
            while let run = nextRun() {
                for index in run {
                    let (sink, delivery) = deliveries[index]
                    sink.deliver(transition(delivery, format: sink.format, patches: sink.wantsPatches, &rendering))
                }
            }
        }
    }

    /// Splits `count` streams between up to ``fanOutThreads`` threads, the delivering thread among them
    /// (`concurrentPerform` runs itself every part that no other thread has taken up): each calls `thread` once, with
    /// `nextRun`, which hands out the next run of streams until none is left. Runs are taken in turn, so a thread that
    /// is held up leaves its share to the others.
    private func splitBetweenThreads(_ count: Int, _ thread: @Sendable (_ nextRun: () -> Range<Int>?) -> Void) {
        let threads = min(fanOutThreads, max(1, count / Self.streamsPerFanOutSlice))
        let taken = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            thread {
                let start = taken.add(Self.streamsPerRun, ordering: .relaxed).oldValue
                return start < count ? start..<min(start + Self.streamsPerRun, count) : nil
            }
        }
    }

    /// How a stream renders a change: its output mode and whether it reads patches.
    private struct Mode: Hashable {
        var format: OutputFormat
        var patches: Bool
    }
}
