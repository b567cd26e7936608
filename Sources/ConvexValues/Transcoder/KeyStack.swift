/// The field names of the objects being read, innermost last.
struct KeyStack {
    var ptr = UnsafeMutablePointer<StreamingTranscoder.KeyEntry>.allocate(capacity: 64)
    var count = 0
    var capacity = 64

    func deallocate() { ptr.deallocate() }

    subscript(i: Int) -> StreamingTranscoder.KeyEntry { ptr[i] }

    @inline(__always) mutating func push(_ e: StreamingTranscoder.KeyEntry) {
        if count == capacity {
            let bigger = UnsafeMutablePointer<StreamingTranscoder.KeyEntry>.allocate(capacity: capacity * 2)
            bigger.moveInitialize(from: ptr, count: count)
            ptr.deallocate()
            ptr = bigger
            capacity *= 2
        }
        (ptr + count).initialize(to: e)
        count &+= 1
    }
}
