import ConvexSyncProtocol

/// Tests only: a Convex timestamp written as its nanoseconds (`ts: 100` for `ConvexTimestamp(nanoseconds: 100)`), so
/// that the hub's tests read as the transitions they describe. The gateway itself converts only where a timestamp meets
/// bytes or text.
extension ConvexTimestamp: ExpressibleByIntegerLiteral {
    public init(integerLiteral nanoseconds: UInt64) {
        self.init(nanoseconds: nanoseconds)
    }
}
