import Synchronization

/// Event bytes made at most once and shared: the `/subscribe/<function>` event of a result, or the `event: patch` of a
/// change, in one output mode. The first stream that sends it frames it (``StreamWire``); every other stream on the
/// same subscription and mode writes the same bytes, so a change that reaches 10,000 streams is framed once.
package final class FramedEventCache: Sendable {
    private let framed = Mutex<[UInt8]?>(nil)

    package init() {}

    /// The bytes, made by `frame` the first time.
    func bytes(_ frame: () -> [UInt8]) -> [UInt8] {
        framed.withLock { framed in
            if let framed { return framed }
            let bytes = frame()
            framed = bytes
            return bytes
        }
    }
}
