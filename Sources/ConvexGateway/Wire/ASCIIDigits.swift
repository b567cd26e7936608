/// Numbers written as ASCII digits straight into an event's bytes: a multi-subscription stream's every event holds a
/// timestamp, a version and a hash per subscription, written once per stream and delivery, with no string made for
/// any of them.
extension Array where Element == UInt8 {
    /// Appends `value` in decimal.
    mutating func appendDecimal(_ value: UInt64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for UInt64.max's 20 digits
        Swift.withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            var rest = value
            repeat {
                start -= 1
                buffer[start] = 0x30 + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start...]))
        }
    }

    /// Appends `value` in lowercase hex without leading zeros (`0` for zero).
    mutating func appendHex(_ value: UInt64) {
        // Eight digits at a time: each half's nibbles spread one to a byte, most significant first in memory, then
        // turned into digits all at once.
        let high = Self.hexDigits(of: UInt32(truncatingIfNeeded: value >> 32))
        let digits = (high, Self.hexDigits(of: UInt32(truncatingIfNeeded: value)))
        let count = Swift.max(1, (64 - value.leadingZeroBitCount + 3) / 4)
        Swift.withUnsafeBytes(of: digits) { buffer in
            append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(16 - count)...]))
        }
    }

    /// The eight hex digits of `half`, most significant first in memory.
    private static func hexDigits(of half: UInt32) -> UInt64 {
        var nibbles = UInt64(half)
        nibbles = (nibbles | (nibbles << 16)) & 0x0000_FFFF_0000_FFFF
        nibbles = (nibbles | (nibbles << 8)) & 0x00FF_00FF_00FF_00FF
        nibbles = (nibbles | (nibbles << 4)) & 0x0F0F_0F0F_0F0F_0F0F
        // Byte i now holds nibble i (from the least significant); 1 in each byte whose nibble is 10 or more:
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        let ascii = nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 0x27  // "a" is 0x27 past "9" + 1
        return ascii.bigEndian
    }
}
