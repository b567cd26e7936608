@testable import ConvexGateway

/// Tests only: a result's version written as its number (`version: 100` for `ResultVersion(value: 100)`), as it
/// appears in a resume id. The gateway itself makes a result's version from the one before
/// (``ResultVersion/next(wallMilliseconds:)``).
extension ResultVersion: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: UInt64) {
        self.init(value: value)
    }
}
