/// Standard base64 (RFC 4648 §4, alphabet `+` `/`): padded on output; on input padding is optional,
/// as Convex's own decoder accepts, while URL-safe characters and stray bytes are rejected.
package enum Base64 {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    /// Base64 character → sextet, 0xFF for anything else; allocated once and never freed, so hot loops read it
    /// without bounds checks.
    nonisolated(unsafe) package static let reverse: UnsafePointer<UInt8> = {
        let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        table.initialize(repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return UnsafePointer(table)
    }()

    package static func encodedLength(_ count: Int) -> Int { ((count + 2) / 3) * 4 }

    package static func encode<C: Collection>(_ bytes: C, into out: inout [UInt8]) where C.Element == UInt8 {
        out.reserveCapacity(out.count + encodedLength(bytes.count))
        alphabet.withUnsafeBufferPointer { a in
            var it = bytes.makeIterator()
            while let b0 = it.next() {
                let b1 = it.next()
                let b2 = it.next()
                out.append(a[Int(b0 >> 2)])
                out.append(a[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
                if let b1 {
                    out.append(a[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)])
                } else {
                    out.append(UInt8(ascii: "="))
                }
                if let b2 {
                    out.append(a[Int(b2 & 0x3F)])
                } else {
                    out.append(UInt8(ascii: "="))
                }
            }
        }
    }

    package static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out: [UInt8] = []
        encode(bytes, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes standard base64; `nil` when the text is not valid base64.
    package static func decode<C: Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        let text = Array(text)
        return text.withUnsafeBufferPointer { p -> [UInt8]? in
            guard let start = p.baseAddress else { return [] }
            guard let shape = validate(start, count: p.count) else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(shape.decodedCount)
            var acc: UInt32 = 0
            var bits = 0
            for i in 0..<shape.bodyCount {
                acc = (acc << 6) | UInt32(reverse[Int(start[i])])
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                }
            }
            return out
        }
    }

    package static func decode(_ text: String) -> [UInt8]? { decode(text.utf8) }

    /// Checks standard base64 without decoding it: padding (at most two `=`, only at the end, making a multiple of
    /// four; optional), the alphabet, and zero leftover bits (canonical encoding). Returns the length of the text
    /// without padding and of the bytes it decodes to, or `nil` when it is not valid base64.
    @inline(__always)
    package static func validate(_ text: UnsafePointer<UInt8>, count: Int) -> (bodyCount: Int, decodedCount: Int)? {
        var body = count
        var pad = 0
        while body > 0 && text[body &- 1] == UInt8(ascii: "=") {
            body &-= 1
            pad &+= 1
        }
        if pad > 2 || (pad > 0 && (body &+ pad) & 3 != 0) || body & 3 == 1 { return nil }
        var invalid: UInt8 = 0
        var i = 0
        while i < body {
            invalid |= reverse[Int(text[i])]
            i &+= 1
        }
        guard invalid & 0x80 == 0 else { return nil }
        let rem = body & 3
        if rem != 0 {
            let last = reverse[Int(text[body &- 1])]
            if (rem == 2 && last & 0x0F != 0) || (rem == 3 && last & 0x03 != 0) { return nil }
        }
        return (body, body / 4 * 3 + (rem == 0 ? 0 : rem &- 1))
    }

    /// Decodes base64 of exactly eight bytes (eleven characters and optionally one `=`) as a little-endian integer.
    @inline(__always)
    package static func decodeEight(_ p: UnsafePointer<UInt8>, count: Int) -> UInt64? {
        var n = count
        if n == 12 && p[11] == UInt8(ascii: "=") { n = 11 }
        guard n == 11 else { return nil }
        @inline(__always) func v(_ i: Int) -> UInt64 { UInt64(reverse[Int(p[i])]) }
        let v0 = v(0), v1 = v(1), v2 = v(2), v3 = v(3), v4 = v(4), v5 = v(5)
        let v6 = v(6), v7 = v(7), v8 = v(8), v9 = v(9), v10 = v(10)
        // 0xFF marks a non-alphabet byte; the final sextet's two low bits must be zero (canonical).
        let invalid = v0 | v1 | v2 | v3 | v4 | v5 | v6 | v7 | v8 | v9 | v10
        guard invalid & 0x80 == 0, v10 & 0x03 == 0 else { return nil }
        // The 64 bits, big-endian, combined in independent groups.
        let a = v0 << 58 | v1 << 52 | v2 << 46 | v3 << 40
        let b = v4 << 34 | v5 << 28 | v6 << 22 | v7 << 16
        let c = v8 << 10 | v9 << 4 | v10 >> 2
        return (a | b | c).byteSwapped
    }

    /// ``decodeEight(_:count:)`` of a buffer.
    package static func decodeEight(_ text: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard let start = text.baseAddress else { return nil }
        return decodeEight(start, count: text.count)
    }
}

extension Int64 {
    /// The 8-byte little-endian two's-complement form used by `$integer`.
    package var littleEndianBytes: [UInt8] {
        withUnsafeBytes(of: self.littleEndian) { Array($0) }
    }

    package init?(littleEndianBytes bytes: [UInt8]) {
        guard bytes.count == 8 else { return nil }
        var v: UInt64 = 0
        for (i, b) in bytes.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        self = Int64(bitPattern: v)
    }
}

extension Double {
    /// True for the values Convex JSON must wrap in `$float`: NaN, ±Infinity and −0.0.
    package var needsFloatWrapper: Bool {
        !isFinite || (self == 0 && sign == .minus)
    }

    package var littleEndianBytes: [UInt8] {
        withUnsafeBytes(of: bitPattern.littleEndian) { Array($0) }
    }

    package init?(littleEndianBytes bytes: [UInt8]) {
        guard bytes.count == 8 else { return nil }
        var v: UInt64 = 0
        for (i, b) in bytes.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        self = Double(bitPattern: v)
    }
}
