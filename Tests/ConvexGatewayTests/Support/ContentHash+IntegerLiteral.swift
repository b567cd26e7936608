@testable import ConvexGateway

/// Tests only: a content hash written as its 64 bits (`hash: 0xA` for `ContentHash(value: 0xA)`), so that the hub's
/// and the streams' tests read as the results they describe. The gateway itself makes hashes with ``ContentHasher``
/// and reads them back from text (``ContentHash/init(parsing:)``).
extension ContentHash: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: UInt64) {
        self.init(value: value)
    }
}
