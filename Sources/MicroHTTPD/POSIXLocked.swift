import Glibc

/// A value behind a POSIX mutex, for state that a C thread (the hang-up watcher's) reads objects from that Swift code
/// made. `Synchronization.Mutex` orders the accesses just as well, but ThreadSanitizer does not see its futex, so an
/// object handed to a C thread through one (made on a pool thread, used on the watcher's) is reported as a race;
/// ThreadSanitizer intercepts `pthread_mutex_lock` and sees the hand-over.
final class POSIXLocked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Calls `body` with the value while holding the mutex; never call it again from `body`.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
