/// 64-bit FNV-1a: a stable hash (unlike `Hasher`, the same in every process), so event ids stay comparable across
/// gateway restarts and replicas.
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x100_0000_01b3
    }

    mutating func combine(_ bytes: [UInt8]) {
        for b in bytes { combine(b) }
    }
}
