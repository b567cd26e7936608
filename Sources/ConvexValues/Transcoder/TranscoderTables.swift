/// Lookup tables shared by the streaming reader, allocated once and never freed.
enum TranscoderTables {
    /// String byte classes: 0 plain ASCII, 1 quote, 2 backslash, 3 control, 4 non-ASCII.
    nonisolated(unsafe) static let stringClass: UnsafePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        for i in 0..<256 {
            p[i] = i < 0x20 ? 3 : i >= 0x80 ? 4 : i == 0x22 ? 1 : i == 0x5C ? 2 : 0
        }
        return UnsafePointer(p)
    }()

    /// 10^0 … 10^19.
    nonisolated(unsafe) static let powersOf10: UnsafePointer<UInt64> = {
        let p = UnsafeMutablePointer<UInt64>.allocate(capacity: 20)
        var v: UInt64 = 1
        for i in 0..<20 {
            p[i] = v
            v = v &* 10
        }
        return UnsafePointer(p)
    }()

    /// Two decimal digits for every value 0…99, for integer printing.
    nonisolated(unsafe) static let digitPairs: UnsafePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 200)
        for i in 0..<100 {
            p[2 * i] = UInt8(0x30 + i / 10)
            p[2 * i + 1] = UInt8(0x30 + i % 10)
        }
        return UnsafePointer(p)
    }()
}

/// Word-at-a-time byte tests (little-endian: the lowest set bit marks the first matching byte, exactly).
enum SWAR {
    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let high: UInt64 = 0x8080_8080_8080_8080
    static let quotes: UInt64 = 0x2222_2222_2222_2222
    static let backslashes: UInt64 = 0x5C5C_5C5C_5C5C_5C5C
    static let deletes: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    static let spaces: UInt64 = 0x2020_2020_2020_2020

    /// High bit set in each zero byte (exact for the lowest one).
    @inline(__always) static func zeroBytes(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & high }
    /// High bit set in each byte below 0x20 (exact for the lowest one).
    @inline(__always) static func lessThanSpace(_ x: UInt64) -> UInt64 { (x &- spaces) & ~x & high }
}
