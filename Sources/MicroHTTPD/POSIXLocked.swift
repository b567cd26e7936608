import Glibc

/// A value behind a POSIX mutex, for state that C threads (the hang-up watcher's, libmicrohttpd's workers) read objects
/// from that other threads made. `Synchronization.Mutex` orders the accesses just as well, but ThreadSanitizer does not
/// see its futex, so an object handed over through one (made on one thread, its fields read outside the lock on
/// another) is reported as a race; ThreadSanitizer intercepts `pthread_mutex_lock` and sees the hand-over.
package final class POSIXLocked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: consuming Value) {
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
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
