import Foundation

/// Numbers, strings and the number printing they need.
extension StreamingTranscoder {
    // MARK: Scalars

    mutating func writeInt64(_ v: Int64) {
        switch mode {
        case .plain:
            writeDecimal(v)
        case .clean:
            out.append(quote)
            writeDecimal(v)
            out.append(quote)
        case .encoded:
            writeWrapper(#"{"$integer":""#, UInt64(bitPattern: v))
        }
    }

    mutating func writeWrapper(_ prefix: StaticString, _ bits: UInt64) {
        out.append(prefix)
        out.reserve(14)
        let bytes = bits.littleEndian
        withUnsafeBytes(of: bytes) { raw in
            let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" as StaticString
            let a = alphabet.utf8Start
            var i = 0
            while i < 8 {
                let b0 = raw[i]
                let b1: UInt8 = i + 1 < 8 ? raw[i + 1] : 0
                let b2: UInt8 = i + 2 < 8 ? raw[i + 2] : 0
                out.put(a[Int(b0 >> 2)])
                out.put(a[Int((b0 & 0x03) << 4 | b1 >> 4)])
                out.put(a[Int((b1 & 0x0F) << 2 | b2 >> 6)])
                if i + 2 < 8 { out.put(a[Int(b2 & 0x3F)]) }
                i += 3
            }
        }
        out.put(UInt8(ascii: "="))
        out.put(quote)
        out.append(UInt8(ascii: "}"))
    }

    mutating func writeDecimal(_ v: Int64) {
        out.reserve(20)
        var magnitude = v.magnitude
        if v < 0 { out.put(UInt8(ascii: "-")) }
        if magnitude < 10 {
            out.put(UInt8(truncatingIfNeeded: magnitude) &+ 0x30)
            return
        }
        let digits = decimalDigits(magnitude)
        // Written backwards: eight digits at a time in 32-bit arithmetic, two per step.
        var i = out.count &+ digits
        out.count = i
        let dst = out.ptr
        @inline(__always) func pair(_ r: UInt32) {
            i &-= 2
            let t = pairs + Int(r &* 2)
            dst[i] = t[0]
            dst[i &+ 1] = t[1]
        }
        while magnitude >= 100_000_000 {
            var chunk = UInt32(truncatingIfNeeded: magnitude % 100_000_000)
            magnitude /= 100_000_000
            for _ in 0..<4 {
                pair(chunk % 100)
                chunk /= 100
            }
        }
        var small = UInt32(truncatingIfNeeded: magnitude)
        while small >= 100 {
            pair(small % 100)
            small /= 100
        }
        if small >= 10 {
            pair(small)
        } else {
            dst[i &- 1] = UInt8(truncatingIfNeeded: small) &+ 0x30
        }
    }

    /// Number of decimal digits of `v` (at least 1).
    @inline(__always) func decimalDigits(_ v: UInt64) -> Int {
        // Estimate from the bit length (log10(2) ≈ 1233/4096), then correct by one comparison.
        let bits = 64 &- v.leadingZeroBitCount
        let estimate = (bits &* 1233) >> 12
        return estimate &+ (v >= powers[estimate] ? 1 : 0)
    }

    mutating func writeSpecialFloat(_ d: Double) {
        if mode == .encoded {
            writeWrapper(#"{"$float":""#, d.bitPattern)
        } else if d.isNaN {
            out.append(#""NaN""#)
        } else if d == .infinity {
            out.append(#""Infinity""#)
        } else if d == -.infinity {
            out.append(#""-Infinity""#)
        } else {
            out.append("-0.0")
        }
    }

    /// Numbers are float64. Plain decimals of at most 15 significant digits in [0.001, 1e15) are printed from
    /// their own digits (the shortest round-trip form of such a number is those digits); others go through `Double`.
    mutating func number() throws(Bail) {
        let start = pos
        let negative = base[pos] == UInt8(ascii: "-")
        if negative { pos &+= 1 }
        guard pos < end, Self.isDigit(base[pos]) else { throw Bail() }
        let intStart = pos
        if base[pos] == UInt8(ascii: "0") {
            pos &+= 1
            if pos < end && Self.isDigit(base[pos]) { throw Bail() }
        } else {
            while pos < end && Self.isDigit(base[pos]) { pos &+= 1 }
        }
        let intEnd = pos
        var fracStart = pos
        var fracEnd = pos
        if pos < end && base[pos] == UInt8(ascii: ".") {
            pos &+= 1
            fracStart = pos
            guard pos < end, Self.isDigit(base[pos]) else { throw Bail() }
            while pos < end && Self.isDigit(base[pos]) { pos &+= 1 }
            fracEnd = pos
        }
        var hasExponent = false
        if pos < end && (base[pos] | 0x20) == UInt8(ascii: "e") {
            hasExponent = true
            pos &+= 1
            if pos < end && (base[pos] == UInt8(ascii: "+") || base[pos] == UInt8(ascii: "-")) { pos &+= 1 }
            guard pos < end, Self.isDigit(base[pos]) else { throw Bail() }
            while pos < end && Self.isDigit(base[pos]) { pos &+= 1 }
        }
        size &+= 9
        if !hasExponent {
            while fracEnd > fracStart && base[fracEnd &- 1] == UInt8(ascii: "0") { fracEnd &-= 1 }
            let intLength = intEnd &- intStart
            let fracLength = fracEnd &- fracStart
            if base[intStart] == UInt8(ascii: "0") {
                if fracLength == 0 {
                    if negative { writeSpecialFloat(-0.0) } else { out.append("0.0") }
                    return
                }
                var firstSignificant = fracStart
                while base[firstSignificant] == UInt8(ascii: "0") { firstSignificant &+= 1 }
                if firstSignificant &- fracStart <= 2 && fracEnd &- firstSignificant <= 15 {
                    out.reserve(fracLength &+ 3)
                    if negative { out.put(UInt8(ascii: "-")) }
                    out.put(UInt8(ascii: "0"))
                    out.put(UInt8(ascii: "."))
                    out.appendSmall(base + fracStart, count: fracLength)
                    return
                }
            } else if intLength &+ fracLength <= 15 {
                out.reserve(intLength &+ fracLength &+ 3)
                if negative { out.put(UInt8(ascii: "-")) }
                out.appendSmall(base + intStart, count: intLength)
                out.put(UInt8(ascii: "."))
                if fracLength == 0 {
                    out.put(UInt8(ascii: "0"))
                } else {
                    out.appendSmall(base + fracStart, count: fracLength)
                }
                return
            }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: pos &- start), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw Bail() }
        if d.needsFloatWrapper {
            writeSpecialFloat(d)
        } else {
            var s = d.description
            s.withUTF8 { out.append($0.baseAddress!, count: $0.count) }
        }
    }

    /// A string value at `pos` (on its opening quote). Strings without escapes are copied as they are.
    mutating func string() throws(Bail) {
        let start = pos
        var p = pos &+ 1
        while true {
            // Eight bytes at a time up to the first quote, backslash, control or non-ASCII byte.
            while p &+ 8 <= end {
                let w = UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self)
                let special =
                    SWAR.zeroBytes(w ^ SWAR.quotes) | SWAR.zeroBytes(w ^ SWAR.backslashes)
                    | SWAR.lessThanSpace(w) | (w & SWAR.high)
                if special != 0 {
                    p &+= special.trailingZeroBitCount >> 3
                    break
                }
                p &+= 8
            }
            guard p < end else { throw Bail() }
            let b = base[p]
            switch cls[Int(b)] {
            case 0:
                p &+= 1
            case 1:
                let length = p &- start &- 1
                out.appendSmall(base + start, count: length &+ 2)
                size &+= length &+ 2
                pos = p &+ 1
                return
            case 4:
                p = try skipUTF8(p)
            case 2:
                pos = start &+ 1
                var decoded = takeScratch()
                defer { scratch = decoded }
                try decodeString(into: &decoded)
                size &+= decoded.count &+ 2
                writeQuoted(decoded)
                return
            default:
                throw Bail()
            }
        }
    }

    /// The reusable decoding buffer, emptied; give it back by assigning `scratch`.
    mutating func takeScratch() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &scratch)
        taken.removeAll(keepingCapacity: true)
        return taken
    }

    /// Validates one multi-byte UTF-8 sequence starting at `p`; returns the index after it.
    @inline(__always) func skipUTF8(_ p: Int) throws(Bail) -> Int {
        let b0 = base[p]
        @inline(__always) func cont(_ i: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) throws(Bail) {
            guard i < end, base[i] >= lo, base[i] <= hi else { throw Bail() }
        }
        switch b0 {
        case 0xC2...0xDF:
            try cont(p &+ 1)
            return p &+ 2
        case 0xE0:
            try cont(p &+ 1, 0xA0, 0xBF)
            try cont(p &+ 2)
            return p &+ 3
        case 0xE1...0xEC, 0xEE...0xEF:
            try cont(p &+ 1)
            try cont(p &+ 2)
            return p &+ 3
        case 0xED:
            try cont(p &+ 1, 0x80, 0x9F)
            try cont(p &+ 2)
            return p &+ 3
        case 0xF0:
            try cont(p &+ 1, 0x90, 0xBF)
            try cont(p &+ 2)
            try cont(p &+ 3)
            return p &+ 4
        case 0xF1...0xF3:
            try cont(p &+ 1)
            try cont(p &+ 2)
            try cont(p &+ 3)
            return p &+ 4
        case 0xF4:
            try cont(p &+ 1, 0x80, 0x8F)
            try cont(p &+ 2)
            try cont(p &+ 3)
            return p &+ 4
        default:
            throw Bail()
        }
    }

    /// Decodes the string whose content starts at `pos` into `bytes`, leaving `pos` after the closing quote.
    mutating func decodeString(into bytes: inout [UInt8]) throws(Bail) {
        while true {
            guard pos < end else { throw Bail() }
            let b = base[pos]
            switch cls[Int(b)] {
            case 0:
                bytes.append(b)
                pos &+= 1
            case 1:
                pos &+= 1
                return
            case 4:
                let next = try skipUTF8(pos)
                bytes.append(contentsOf: UnsafeBufferPointer(start: base + pos, count: next &- pos))
                pos = next
            case 2:
                guard pos &+ 1 < end else { throw Bail() }
                let e = base[pos &+ 1]
                pos &+= 2
                switch e {
                case quote: bytes.append(quote)
                case backslash: bytes.append(backslash)
                case UInt8(ascii: "/"): bytes.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar <= 0xDBFF {
                        guard pos &+ 1 < end, base[pos] == backslash, base[pos &+ 1] == UInt8(ascii: "u") else {
                            throw Bail()
                        }
                        pos &+= 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low <= 0xDFFF else { throw Bail() }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                        throw Bail()
                    }
                    appendUTF8(scalar, to: &bytes)
                default:
                    throw Bail()
                }
            default:
                throw Bail()
            }
        }
    }

    mutating func hex4() throws(Bail) -> UInt32 {
        guard end &- pos >= 4 else { throw Bail() }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = base[pos]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c &- 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c &- 0x61 &+ 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c &- 0x41 &+ 10)
            default: throw Bail()
            }
            v = v << 4 | d
            pos &+= 1
        }
        return v
    }

    func appendUTF8(_ scalar: UInt32, to bytes: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            bytes.append(UInt8(scalar))
        case 0x80..<0x800:
            bytes.append(UInt8(0xC0 | scalar >> 6))
            bytes.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            bytes.append(UInt8(0xE0 | scalar >> 12))
            bytes.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            bytes.append(UInt8(0x80 | scalar & 0x3F))
        default:
            bytes.append(UInt8(0xF0 | scalar >> 18))
            bytes.append(UInt8(0x80 | (scalar >> 12) & 0x3F))
            bytes.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            bytes.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Writes decoded UTF-8 as a JSON string, escaping exactly as the value writer does.
    mutating func writeQuoted(_ bytes: [UInt8]) {
        out.reserve(bytes.count &* 6 &+ 2)
        out.put(quote)
        for b in bytes {
            switch b {
            case quote: out.put(backslash); out.put(quote)
            case backslash: out.put(backslash); out.put(backslash)
            case 0x0A: out.put(backslash); out.put(UInt8(ascii: "n"))
            case 0x0D: out.put(backslash); out.put(UInt8(ascii: "r"))
            case 0x09: out.put(backslash); out.put(UInt8(ascii: "t"))
            case 0x08: out.put(backslash); out.put(UInt8(ascii: "b"))
            case 0x0C: out.put(backslash); out.put(UInt8(ascii: "f"))
            case 0..<0x20:
                out.put(backslash)
                out.put(UInt8(ascii: "u"))
                out.put(UInt8(ascii: "0"))
                out.put(UInt8(ascii: "0"))
                out.put(hexDigit(b >> 4))
                out.put(hexDigit(b & 0xF))
            default: out.put(b)
            }
        }
        out.put(quote)
    }
}
