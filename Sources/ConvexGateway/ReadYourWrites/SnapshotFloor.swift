import ConvexSyncProtocol
import HTTPFields
import Synchronization

/// Read-your-writes over HTTP: the oldest snapshot of the database a query answer may come from.
///
/// - On one gateway (`--read-your-writes`, on by default): once it has answered a mutation committed at `T`, no query
///   answer it gives afterwards, to any caller, comes from a snapshot older than `T`.
/// - Across replicas: a request with `Convex-Min-Timestamp: T` is answered from a snapshot at `T` or later.
///
/// Every mutation answer says its commit timestamp, and every query answer the timestamp of its snapshot, in
/// `Convex-Timestamp` (decimal nanoseconds, Convex's own timestamps).
enum SnapshotFloor {
    /// The oldest snapshot a query answer may come from: the caller's `Convex-Min-Timestamp`, and with read-your-writes
    /// the newest commit this gateway has answered.
    static func required(
        minTimestamp: ConvexTimestamp?, lastCommit: ConvexTimestamp, readYourWrites: Bool
    ) -> ConvexTimestamp {
        max(minTimestamp ?? .zero, readYourWrites ? lastCommit : .zero)
    }

    /// Parses a `Convex-Min-Timestamp` value: decimal digits (optional whitespace around them), at most 2^63 − 1, as
    /// Convex timestamps are.
    /// - Throws: 400 `InvalidTimestamp` naming the value.
    static func minTimestamp(_ field: String?) throws(GatewayError) -> ConvexTimestamp? {
        guard let field else { return nil }
        let text = field.trimmingWhitespace
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = UInt64(String(text)), value <= UInt64(Int64.max)
        else {
            throw GatewayError.invalidTimestamp(
                "\(HeaderName.convexMinTimestamp) must be a Convex timestamp: a decimal number of nanoseconds up to "
                    + "9223372036854775807, as a response's \(HeaderName.convexTimestamp) gives it")
        }
        return ConvexTimestamp(nanoseconds: value)
    }
}

/// The newest commit timestamp among the mutations this gateway has answered (read without a lock by every query).
final class CommitWatermark: Sendable {
    /// The timestamp's nanoseconds: stored as a plain `UInt64` for lock-free reads.
    private let latest = Atomic<UInt64>(0)

    init() {}

    var ts: ConvexTimestamp { ConvexTimestamp(nanoseconds: latest.load(ordering: .acquiring)) }

    /// A mutation committed at `ts` was answered.
    func committed(_ ts: ConvexTimestamp) {
        let desired = ts.nanoseconds
        var current = latest.load(ordering: .relaxed)
        while desired > current {
            let (exchanged, original) = latest.compareExchange(
                expected: current, desired: desired, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }
}

extension String {
    fileprivate var trimmingWhitespace: Substring {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
