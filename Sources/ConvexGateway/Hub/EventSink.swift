/// Where one Server-Sent Event stream's events go. Implementations never block.
public protocol EventSink: AnyObject, Sendable {
    /// The output mode this stream renders values in.
    var format: OutputFormat { get }
    /// Queues an event. When `coalesce` is true and an earlier coalescable event has not been written yet, the new
    /// one replaces it: a query result is state, so a slow reader only ever needs the latest.
    func deliver(_ event: [UInt8], coalesce: Bool)
    /// Ends the stream cleanly (the client's `EventSource` reconnects).
    func finish()
}
