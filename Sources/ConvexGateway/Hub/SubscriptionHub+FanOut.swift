import ConvexValues
import Dispatch
import Synchronization

extension SubscriptionHub {
    /// Streams below this many get a fan-out on the delivering thread alone.
    static let streamsPerFanOutSlice = 256
    /// How many streams of a fan-out a thread takes at a time.
    static let streamsPerRun = 32

    /// Delivers one change to every stream whose only subscription it is (``HubState/FanOut``).
    ///
    /// One transition per output mode and patch choice (a handful) is shared by every stream. A delivery to an idle
    /// stream is a send to its socket made by the delivering thread (MicroHTTPD's direct writes), so the streams are
    /// split between ``fanOutThreads`` threads, which take runs of streams in turn until none is left, the delivering
    /// thread among them (`concurrentPerform` runs every slice itself that no other thread has taken up). The transition of
    /// the first stream's mode is made before the sends start; a stream in another mode is set aside by its slice and
    /// served after them, once its mode's transition is made (rendering is not shared between threads).
    func deliver(_ fanOut: HubState.FanOut, _ rendering: inout Rendering) {
        let sinks = fanOut.sinks
        guard let first = sinks.first else { return }
        let mode = Mode(format: first.format, patches: first.wantsPatches)
        let shared = transition(fanOut.delivery, format: mode.format, patches: mode.patches, &rendering)
        let slices = min(fanOutThreads, max(1, sinks.count / Self.streamsPerFanOutSlice))
        let setAside = Mutex<[Int]>([])
        // Runs of streams are taken in turn, so a thread that is held up leaves its share to the others.
        let taken = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: slices) { _ in
            var others: [Int] = []
            while true {
                let start = taken.add(Self.streamsPerRun, ordering: .relaxed).oldValue
                guard start < sinks.count else { break }
                for index in start..<min(start + Self.streamsPerRun, sinks.count) {
                    let sink = sinks[index]
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
            let sink = sinks[index]
            let other = Mode(format: sink.format, patches: sink.wantsPatches)
            if made[other] == nil {
                made[other] = transition(fanOut.delivery, format: other.format, patches: other.patches, &rendering)
            }
            sink.deliver(made[other]!)
        }
    }

    /// Delivers each stream its own delivery (streams of several subscriptions), split between the threads as a
    /// fan-out is. Each slice renders with its own ``Rendering`` (a result's body is rendered once either way: the
    /// hub keeps it), and a stream's deliveries all go to one slice, so they stay in order.
    func deliver(_ deliveries: [(sink: any EventSink, delivery: HubState.Delivery)]) {
        let slices = min(fanOutThreads, max(1, deliveries.count / Self.streamsPerFanOutSlice))
        DispatchQueue.concurrentPerform(iterations: slices) { slice in
            var rendering = Rendering()
            for (sink, delivery) in deliveries where Self.slice(of: sink, among: slices) == slice {
                sink.deliver(transition(delivery, format: sink.format, patches: sink.wantsPatches, &rendering))
            }
        }
    }

    /// The slice a stream's deliveries go to: always the same one for one stream.
    private static func slice(of sink: any EventSink, among slices: Int) -> Int {
        slices == 1 ? 0 : Int((UInt(bitPattern: ObjectIdentifier(sink).hashValue) >> 4) % UInt(slices))
    }

    /// How a stream renders a change: its output mode and whether it reads patches.
    private struct Mode: Hashable {
        var format: OutputFormat
        var patches: Bool
    }
}
