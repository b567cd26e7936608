import ConvexValues
import Dispatch

extension SubscriptionHub {
    /// Streams below this many get a fan-out on the delivering thread alone.
    static let streamsPerFanOutSlice = 256

    /// Delivers one change to every stream whose only subscription it is (``HubState/FanOut``).
    ///
    /// One transition per output mode and patch choice (a handful) is shared by every stream. A delivery to an idle
    /// stream is a send to its socket made by the delivering thread (MicroHTTPD's direct writes), so the streams are
    /// split between ``fanOutThreads`` threads: each slice sends to every `slices`-th stream, the delivering thread
    /// taking one (`concurrentPerform` runs every slice itself that no other thread has taken up).
    func deliver(_ fanOut: HubState.FanOut, _ rendering: inout Rendering) {
        let sinks = fanOut.sinks
        var made: [(format: OutputFormat, patches: Bool, transition: StreamTransition)] = []
        var choices: [Int] = []
        choices.reserveCapacity(sinks.count)
        for sink in sinks {
            let format = sink.format
            let patches = sink.wantsPatches
            if let index = made.firstIndex(where: { $0.format == format && $0.patches == patches }) {
                choices.append(index)
            } else {
                let transition = transition(fanOut.delivery, format: format, patches: patches, &rendering)
                choices.append(made.count)
                made.append((format, patches, transition))
            }
        }
        let transitions = made.map(\.transition)
        let chosen = choices
        let slices = min(fanOutThreads, max(1, sinks.count / Self.streamsPerFanOutSlice))
        DispatchQueue.concurrentPerform(iterations: slices) { slice in
            for index in stride(from: slice, to: sinks.count, by: slices) {
                sinks[index].deliver(transitions[chosen[index]])
            }
        }
    }
}
