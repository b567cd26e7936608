/// The gateway's one content hash, 64-bit FNV-1a (``ContentHasher`` makes it): stable (unlike `Hasher`, the same in
/// every process), so ETags, event ids and patch bases stay comparable across gateway restarts and replicas. ``text``
/// is its one written form (lowercase hex without leading zeros), ``init(parsing:)`` reads it back.
package struct ContentHash: Hashable, Sendable {
    let value: UInt64

    init(value: UInt64) {
        self.value = value
    }

    /// The hash ``text`` wrote, `nil` for anything else.
    init?(parsing text: Substring) {
        guard !text.isEmpty, text.utf8.count <= 16, let value = UInt64(text, radix: 16) else { return nil }
        self.value = value
    }

    /// The hash as it appears in ETags, event ids and a change's `v` and `base`.
    var text: String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``text``'s bytes: what a stream's event is built of, once per stream and subscription.
    func append(to bytes: inout [UInt8]) {
        bytes.appendHex(value)
    }
}

/// Makes a ``ContentHash`` of bytes, combined in order.
struct ContentHasher {
    private var state: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(_ byte: UInt8) {
        state = (state ^ UInt64(byte)) &* 0x100_0000_01b3
    }

    mutating func combine(_ bytes: [UInt8]) {
        for b in bytes { combine(b) }
    }

    /// The hash of the bytes combined so far.
    var hash: ContentHash { ContentHash(value: state) }
}
