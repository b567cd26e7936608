/// `$integer`, `$float` and `$bytes` wrappers.
extension StreamingTranscoder {
    // MARK: Wrappers

    enum WrapperKind { case integer, float, bytes }

    // `$integer`, `$float"` and `$bytes"` as little-endian words (checked by a test against the text).
    static let integerKey: UInt64 = 0x7265_6765_746E_6924
    static let floatKey: UInt64 = 0x0022_7461_6F6C_6624
    static let bytesKey: UInt64 = 0x0022_7365_7479_6224

    /// Reads `{"$integer"|"$float"|"$bytes": "<base64>"}` with `pos` on the key's opening quote.
    mutating func wrapper() throws(Bail) {
        let k = UnsafeRawPointer(base + (pos &+ 1))
        // `$integer"`, `$float"` or `$bytes"`, compared eight bytes at a time; a valid wrapper has at least
        // `:""}` after its key, so the loads stay inside the input.
        guard end &- pos &- 1 >= 11 else { throw Bail() }
        let word = UInt64(littleEndian: k.loadUnaligned(as: UInt64.self))
        let kind: WrapperKind
        if word == Self.integerKey && k.load(fromByteOffset: 8, as: UInt8.self) == quote {
            kind = .integer
            pos &+= 10
        } else if word & 0x00FF_FFFF_FFFF_FFFF == Self.floatKey {
            kind = .float
            pos &+= 8
        } else if word & 0x00FF_FFFF_FFFF_FFFF == Self.bytesKey {
            kind = .bytes
            pos &+= 8
        } else {
            throw Bail()
        }
        skipWhitespace()
        guard pos < end, base[pos] == UInt8(ascii: ":") else { throw Bail() }
        pos &+= 1
        skipWhitespace()
        guard pos < end, base[pos] == quote else { throw Bail() }
        let textStart = pos &+ 1
        var p = textStart
        if kind != .bytes && textStart &+ 12 < end && base[textStart &+ 12] == quote {
            // The usual padded eight-byte text; a quote or backslash inside fails the base64 check.
            p = textStart &+ 12
        } else {
            while p < end && base[p] != quote {
                if base[p] == backslash { throw Bail() }
                p &+= 1
            }
            guard p < end else { throw Bail() }
        }
        let textEnd = p
        pos = p &+ 1
        skipWhitespace()
        guard pos < end, base[pos] == UInt8(ascii: "}") else { throw Bail() }
        pos &+= 1
        switch kind {
        case .integer:
            guard let bits = Base64.decodeEight(base + textStart, count: textEnd &- textStart) else { throw Bail() }
            size &+= 9
            writeInt64(Int64(bitPattern: bits))
        case .float:
            guard let bits = Base64.decodeEight(base + textStart, count: textEnd &- textStart) else { throw Bail() }
            let d = Double(bitPattern: bits)
            guard d.needsFloatWrapper else { throw Bail() }
            size &+= 9
            writeSpecialFloat(d)
        case .bytes:
            try bytesWrapper(textStart, textEnd)
        }
    }

    mutating func bytesWrapper(_ start: Int, _ end: Int) throws(Bail) {
        guard let (body, decoded) = Base64.validate(base + start, count: end &- start) else { throw Bail() }
        size &+= decoded &+ 2
        let rem = body & 3
        let padding = rem == 0 ? 0 : 4 &- rem
        if mode == .encoded { out.append(#"{"$bytes":"#) }
        out.reserve(body &+ padding &+ 2)
        out.put(quote)
        out.append(base + start, count: body)
        for _ in 0..<padding { out.put(UInt8(ascii: "=")) }
        out.put(quote)
        if mode == .encoded { out.append(UInt8(ascii: "}")) }
    }
}
