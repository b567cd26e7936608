/// The gateway's one content hash, 64-bit FNV-1a: stable (unlike `Hasher`, the same in every process), so ETags,
/// event ids and patch bases stay comparable across gateway restarts and replicas. ``text(_:)`` is its one written
/// form (lowercase hex without leading zeros), ``parse(_:)`` reads it back.
struct ContentHash {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x100_0000_01b3
    }

    mutating func combine(_ bytes: [UInt8]) {
        for b in bytes { combine(b) }
    }

    /// A hash as it appears in ETags, event ids and a change's `v` and `base`.
    static func text(_ hash: UInt64) -> String {
        var bytes: [UInt8] = []
        append(hash, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``text(_:)``'s bytes: what a stream's event is built of, once per stream and subscription.
    static func append(_ hash: UInt64, to bytes: inout [UInt8]) {
        bytes.appendHex(hash)
    }

    /// The hash ``text(_:)`` wrote, `nil` for anything else.
    static func parse(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 16 else { return nil }
        return UInt64(text, radix: 16)
    }
}
