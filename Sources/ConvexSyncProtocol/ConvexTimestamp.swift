import ConvexValues

/// A Convex commit timestamp: nanoseconds since the Unix epoch (valid range 0 … 2^63−1).
///
/// On the wire (StateVersion `ts`, MutationResponse `ts`, Connect `maxObservedTimestamp`) it is the standard
/// base64 of the 8 little-endian bytes of the u64, e.g. `0` is `"AAAAAAAAAAA="` and `1000` is `"6AMAAAAAAAA="`.
public struct ConvexTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Nanoseconds since the Unix epoch.
    public var nanoseconds: UInt64

    @inlinable
    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// The timestamp 0, used by the first `startVersion` of every socket.
    @inlinable
    public static var zero: ConvexTimestamp { ConvexTimestamp(nanoseconds: 0) }

    /// Parses the base64 wire form; `nil` unless it is valid standard base64 of exactly 8 bytes
    /// holding a value ≤ 2^63−1.
    public init?(base64 text: String) {
        guard let bytes = Base64.decode(text), bytes.count == 8 else { return nil }
        var v: UInt64 = 0
        for (i, b) in bytes.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        guard v <= UInt64(Int64.max) else { return nil }
        self.nanoseconds = v
    }

    /// The base64 wire form (padded standard base64 of the little-endian u64).
    public var base64: String {
        Base64.encode(withUnsafeBytes(of: nanoseconds.littleEndian) { Array($0) })
    }

    @inlinable
    public static func < (lhs: ConvexTimestamp, rhs: ConvexTimestamp) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public var description: String { "\(nanoseconds)ns" }
}

/// The version of one socket's synchronized state: query-set version, identity version and snapshot timestamp.
public struct StateVersion: Sendable, Hashable, CustomStringConvertible {
    public var querySet: UInt32
    public var identity: UInt32
    public var ts: ConvexTimestamp

    public init(querySet: UInt32, identity: UInt32, ts: ConvexTimestamp) {
        self.querySet = querySet
        self.identity = identity
        self.ts = ts
    }

    /// `{querySet: 0, identity: 0, ts: 0}`: the start of every socket.
    public static let initial = StateVersion(querySet: 0, identity: 0, ts: .zero)

    public var description: String { "{querySet: \(querySet), identity: \(identity), ts: \(ts.nanoseconds)}" }
}
