import Foundation
import Synchronization

/// Whole lines to standard error, one at a time, for the JSON log: each line is one write under a lock, so that lines
/// from several threads never interleave (as swift-log's `StreamLogHandler` writes its own).
enum StandardErrorLines {
    private static let lock = Mutex(())

    @Sendable static func write(_ line: String) {
        let bytes = Data(line.utf8)
        lock.withLock { _ in FileHandle.standardError.write(bytes) }
    }
}
