/// The version of a subscription's result: it grows with every change of the result, and follows the wall clock in
/// milliseconds, so it keeps growing across gateway restarts and replicas (a stream's resume id carries it).
package struct ResultVersion: Comparable, Hashable, Sendable {
    let value: UInt64

    init(value: UInt64) {
        self.value = value
    }

    /// What precedes every result: the version of a subscription with no result yet.
    static var zero: ResultVersion { ResultVersion(value: 0) }

    /// The version of the result after this one: one more, or `wallMilliseconds` (the wall clock) when that is more.
    func next(wallMilliseconds: UInt64) -> ResultVersion {
        ResultVersion(value: max(value + 1, wallMilliseconds))
    }

    package static func < (lhs: ResultVersion, rhs: ResultVersion) -> Bool {
        lhs.value < rhs.value
    }
}
