import ConvexValues

extension HubState {
    /// What is kept of an entry's current result once rendered, by output mode: a `GET`'s body, and the shared event
    /// bytes of its updates (framed by the first stream that sends one). Emptied by each new result (``reset()``);
    /// whether a rendering is of the current result is for ``HubState`` to check (its `cachedBody`, `cache`, `frame`).
    struct RenderCache {
        private(set) var bodies: [OutputFormat: [UInt8]] = [:]
        private var frames: [OutputFormat: FramedEventCache] = [:]

        /// The kept body in `format`, if any.
        func body(_ format: OutputFormat) -> [UInt8]? { bodies[format] }

        /// Keeps `body`, the result rendered in `format`.
        mutating func keep(_ body: [UInt8], _ format: OutputFormat) {
            bodies[format] = body
        }

        /// Where the event bytes of the result's updates in `format` are kept: made the first time, then the same one.
        mutating func frame(_ format: OutputFormat) -> FramedEventCache {
            if let frame = frames[format] { return frame }
            let frame = FramedEventCache()
            frames[format] = frame
            return frame
        }

        /// A new result: nothing kept is of it.
        mutating func reset() {
            if !bodies.isEmpty { bodies = [:] }
            if !frames.isEmpty { frames = [:] }
        }
    }
}
