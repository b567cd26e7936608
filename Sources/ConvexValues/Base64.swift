/// Standard base64 (RFC 4648 §4, alphabet `+` `/`): padded on output; on input padding is optional,
/// as Convex's own decoder accepts, while URL-safe characters and stray bytes are rejected.
package enum Base64 {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
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
        var body = Array(text)
        // Padding: at most two '=' and only at the end, making a multiple of four.
        var pad = 0
        while let last = body.last, last == UInt8(ascii: "=") {
            body.removeLast()
            pad += 1
        }
        if pad > 2 || (pad > 0 && (body.count + pad) % 4 != 0) { return nil }
        if body.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(body.count * 3 / 4)
        return reverse.withUnsafeBufferPointer { r -> [UInt8]? in
            var acc: UInt32 = 0
            var bits = 0
            for c in body {
                let v = r[Int(c)]
                if v == 0xFF { return nil }
                acc = (acc << 6) | UInt32(v)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                }
            }
            // Leftover bits must be zero (canonical encoding).
            if bits > 0 && (acc & ((1 << UInt32(bits)) - 1)) != 0 { return nil }
            return out
        }
    }

    package static func decode(_ text: String) -> [UInt8]? { decode(text.utf8) }

    /// Decodes base64 of exactly eight bytes (eleven characters and optionally one `=`) as a little-endian integer.
    package static func decodeEight(_ text: UnsafeBufferPointer<UInt8>) -> UInt64? {
        var n = text.count
        if n == 12 && text[11] == UInt8(ascii: "=") { n = 11 }
        guard n == 11 else { return nil }
        return reverse.withUnsafeBufferPointer { r -> UInt64? in
            var acc: UInt64 = 0
            for i in 0..<10 {
                let v = r[Int(text[i])]
                if v == 0xFF { return nil }
                acc = acc << 6 | UInt64(v)
            }
            let last = r[Int(text[10])]
            // The final character's two low bits are padding and must be zero.
            if last == 0xFF || last & 0x03 != 0 { return nil }
            return (acc << 4 | UInt64(last >> 2)).byteSwapped
        }
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
