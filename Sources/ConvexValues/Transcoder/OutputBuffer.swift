/// A growable byte buffer written through a raw pointer, so appends compile to stores without checks. It may start
/// in borrowed storage (an array being initialized) and moves to its own allocation when that is full.
struct OutputBuffer {
    var ptr: UnsafeMutablePointer<UInt8>
    var count = 0
    var capacity: Int
    /// Whether `ptr` was allocated here (and must be freed here).
    private(set) var owned: Bool

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        ptr = .allocate(capacity: self.capacity)
        owned = true
    }

    init(borrowing storage: UnsafeMutablePointer<UInt8>, capacity: Int) {
        ptr = storage
        self.capacity = capacity
        owned = false
    }

    func deallocate() {
        if owned { ptr.deallocate() }
    }

    /// Hands the owned allocation to the caller, leaving this buffer empty.
    mutating func detach() -> OutputBuffer {
        let detached = self
        ptr = .allocate(capacity: 1)
        capacity = 1
        count = 0
        return detached
    }

    @inline(__always) mutating func reserve(_ n: Int) {
        if count &+ n > capacity { grow(count &+ n) }
    }

    @inline(never) mutating func grow(_ minimum: Int) {
        let newCapacity = max(capacity &* 2, minimum)
        let newPtr = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newPtr.update(from: ptr, count: count)
        if owned { ptr.deallocate() }
        ptr = newPtr
        capacity = newCapacity
        owned = true
    }

    /// Appends without a capacity check; call `reserve` first.
    @inline(__always) mutating func put(_ b: UInt8) {
        ptr[count] = b
        count &+= 1
    }

    @inline(__always) mutating func append(_ b: UInt8) {
        reserve(1)
        put(b)
    }

    @inline(__always) mutating func append(_ src: UnsafePointer<UInt8>, count n: Int) {
        reserve(n)
        (ptr + count).update(from: src, count: n)
        count &+= n
    }

    mutating func append(_ s: StaticString) {
        appendSmall(s.utf8Start, count: s.utf8CodeUnitCount)
    }

    /// For the short runs that dominate JSON (keys, numbers, short strings): word copies beat a call to `memmove`.
    @inline(__always) mutating func appendSmall(_ src: UnsafePointer<UInt8>, count n: Int) {
        if n > 64 {
            append(src, count: n)
            return
        }
        reserve(n)
        let dst = UnsafeMutableRawPointer(ptr + count)
        let from = UnsafeRawPointer(src)
        var i = 0
        while i &+ 8 <= n {
            dst.storeBytes(of: from.loadUnaligned(fromByteOffset: i, as: UInt64.self), toByteOffset: i, as: UInt64.self)
            i &+= 8
        }
        while i < n {
            dst.storeBytes(of: from.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
            i &+= 1
        }
        count &+= n
    }
}
