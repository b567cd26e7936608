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
        var digits: (UInt64, UInt64) = (0, 0)  // room for 16 digits
        Swift.withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            var rest = value
            repeat {
                start -= 1
                let nibble = UInt8(truncatingIfNeeded: rest) & 0x0F
                buffer[start] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
                rest >>= 4
            } while rest > 0
            append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start...]))
        }
    }
}
