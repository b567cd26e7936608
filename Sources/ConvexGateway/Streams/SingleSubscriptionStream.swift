/// A `/subscribe/<function>` stream: one subscription, whose events are sent as the hub rendered them. A reader
/// that keeps up gets every event; once more than ``limit`` bytes wait, a new value replaces what is queued (a
/// query result is state, so only the latest matters).
final class SingleSubscriptionStream: EventSink {
    let output: any EventStreamOutput
    let format: OutputFormat
    let limit: Int

    init(output: any EventStreamOutput, format: OutputFormat, limit: Int) {
        self.output = output
        self.format = format
        self.limit = limit
    }

    func deliver(_ update: SubscriptionUpdate) {
        if output.pendingByteCount < limit {
            output.write(update.event)
        } else {
            output.replacePending(with: update.event)
        }
    }

    func finish() { output.finish() }
}
