import Foundation

let quote = UInt8(ascii: "\"")
let backslash = UInt8(ascii: "\\")

struct StreamingTranscoder {
    struct KeyEntry {
        /// Offset of the name in the input, or in `keyStore` when it was escaped.
        var start: Int
        var length: Int
        var escaped: Bool
    }

    let base: UnsafePointer<UInt8>
    let end: Int
    let mode: OutputFormat
    var pos = 0
    var out: OutputBuffer
    var depth = 0
    var size = 0
    var keys = KeyStack()
    var keyStore: OutputBuffer
    var scratch: [UInt8] = []
    let cls: UnsafePointer<UInt8>
    let pairs: UnsafePointer<UInt8>
    let powers: UnsafePointer<UInt64>

    init(base: UnsafePointer<UInt8>, end: Int, mode: OutputFormat, out: OutputBuffer) {
        self.base = base
        self.end = end
        self.mode = mode
        self.out = out
        cls = TranscoderTables.stringClass
        pairs = TranscoderTables.digitPairs
        powers = TranscoderTables.powersOf10
        keyStore = OutputBuffer(capacity: 64)
    }

    func deallocate() {
        out.deallocate()
        keyStore.deallocate()
        keys.deallocate()
    }

    mutating func run() throws(Bail) {
        skipWhitespace()
        try value()
        skipWhitespace()
        if pos != end || size > ConvexLimits.maxValueSize { throw Bail() }
    }

    @inline(__always) mutating func skipWhitespace() {
        // Compact JSON has none: one comparison settles the common case.
        while pos < end {
            let b = base[pos]
            if b > 0x20 { return }
            if b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { pos &+= 1 } else { return }
        }
    }

    @inline(__always) static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    mutating func value() throws(Bail) {
        guard pos < end else { throw Bail() }
        switch base[pos] {
        case UInt8(ascii: "{"): try object()
        case UInt8(ascii: "["): try array()
        case quote: try string()
        case UInt8(ascii: "t"): try literal(0x6575_7274, count: 4)  // "true"
        case UInt8(ascii: "f"): try literal(0x736C_6166, count: 5)  // "fals" + "e"
        case UInt8(ascii: "n"): try literal(0x6C6C_756E, count: 4)  // "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw Bail()
        }
    }

    /// `true`, `null` (four bytes, `word` little-endian) or `false` (`fals` then `e`).
    @inline(__always) mutating func literal(_ word: UInt32, count n: Int) throws(Bail) {
        guard end &- pos >= n,
            UnsafeRawPointer(base + pos).loadUnaligned(as: UInt32.self) == UInt32(littleEndian: word),
            n == 4 || base[pos &+ 4] == UInt8(ascii: "e")
        else { throw Bail() }
        out.appendSmall(base + pos, count: n)
        pos &+= n
        size &+= 1
    }

    // MARK: Containers

    mutating func array() throws(Bail) {
        depth &+= 1
        if depth > ConvexLimits.maxNesting { throw Bail() }
        pos &+= 1
        size &+= 2
        out.append(UInt8(ascii: "["))
        skipWhitespace()
        if pos < end && base[pos] == UInt8(ascii: "]") {
            pos &+= 1
            out.append(UInt8(ascii: "]"))
            depth &-= 1
            return
        }
        var count = 0
        while true {
            count &+= 1
            if count > ConvexLimits.maxArrayLength { throw Bail() }
            skipWhitespace()
            try value()
            skipWhitespace()
            guard pos < end else { throw Bail() }
            let b = base[pos]
            pos &+= 1
            if b == UInt8(ascii: ",") {
                out.append(UInt8(ascii: ","))
            } else if b == UInt8(ascii: "]") {
                out.append(UInt8(ascii: "]"))
                depth &-= 1
                return
            } else {
                throw Bail()
            }
        }
    }

    mutating func object() throws(Bail) {
        pos &+= 1
        skipWhitespace()
        guard pos < end else { throw Bail() }
        if base[pos] == quote && pos &+ 1 < end && base[pos &+ 1] == UInt8(ascii: "$") {
            // Either a wrapper or an error: `$` keys are valid nowhere else.
            try wrapper()
            return
        }
        depth &+= 1
        if depth > ConvexLimits.maxNesting { throw Bail() }
        size &+= 2
        out.append(UInt8(ascii: "{"))
        if base[pos] == UInt8(ascii: "}") {
            pos &+= 1
            out.append(UInt8(ascii: "}"))
            depth &-= 1
            return
        }
        let frame = keys.count
        // Keys in strictly increasing byte order (as Convex sends them) cannot repeat; otherwise hash them.
        var hashes: Set<UInt64>? = nil
        var count = 0
        while true {
            guard pos < end, base[pos] == quote else { throw Bail() }
            count &+= 1
            if count > ConvexLimits.maxObjectFields { throw Bail() }
            let entry = try key()
            if hashes == nil && count > 1 && !keyLess(keys[keys.count &- 1], entry) {
                var set = Set<UInt64>(minimumCapacity: count &* 2)
                var i = frame
                while i < keys.count {
                    set.insert(keyHash(keys[i]))
                    i &+= 1
                }
                hashes = set
            }
            if hashes != nil {
                let h = keyHash(entry)
                if !hashes!.insert(h).inserted {
                    var i = frame
                    while i < keys.count {
                        if keyEqual(keys[i], entry) { throw Bail() }
                        i &+= 1
                    }
                }
            }
            keys.push(entry)
            skipWhitespace()
            guard pos < end, base[pos] == UInt8(ascii: ":") else { throw Bail() }
            pos &+= 1
            out.append(UInt8(ascii: ":"))
            skipWhitespace()
            try value()
            skipWhitespace()
            guard pos < end else { throw Bail() }
            let b = base[pos]
            pos &+= 1
            if b == UInt8(ascii: ",") {
                out.append(UInt8(ascii: ","))
                skipWhitespace()
            } else if b == UInt8(ascii: "}") {
                out.append(UInt8(ascii: "}"))
                keys.count = frame
                depth &-= 1
                return
            } else {
                throw Bail()
            }
        }
    }

    @inline(__always) func keyBytes(_ k: KeyEntry) -> UnsafePointer<UInt8> {
        k.escaped ? UnsafePointer(keyStore.ptr + k.start) : base + k.start
    }

    /// Bytewise order of two keys, eight bytes at a time where the input allows the loads.
    @inline(__always) func keyLess(_ a: KeyEntry, _ b: KeyEntry) -> Bool {
        let n = min(a.length, b.length)
        if !a.escaped && !b.escaped && a.start &+ 8 <= end && b.start &+ 8 <= end {
            let wa = UInt64(bigEndian: UnsafeRawPointer(base + a.start).loadUnaligned(as: UInt64.self))
            let wb = UInt64(bigEndian: UnsafeRawPointer(base + b.start).loadUnaligned(as: UInt64.self))
            if n < 8 {
                let mask: UInt64 = n == 0 ? 0 : ~0 << (64 &- 8 &* UInt64(n))
                let ma = wa & mask
                let mb = wb & mask
                return ma != mb ? ma < mb : a.length < b.length
            }
            if wa != wb { return wa < wb }
        }
        let pa = keyBytes(a)
        let pb = keyBytes(b)
        var i = 0
        while i < n {
            let x = pa[i]
            let y = pb[i]
            if x != y { return x < y }
            i &+= 1
        }
        return a.length < b.length
    }

    func keyEqual(_ a: KeyEntry, _ b: KeyEntry) -> Bool {
        a.length == b.length && memcmp(keyBytes(a), keyBytes(b), a.length) == 0
    }

    func keyHash(_ k: KeyEntry) -> UInt64 {
        let p = keyBytes(k)
        var h = UInt64(truncatingIfNeeded: k.length) &* 0xC2B2_AE3D_27D4_EB4F
        var i = 0
        while i < k.length {
            h = (h ^ UInt64(p[i])) &* 0x100_0000_01B3
            i &+= 1
        }
        return h ^ (h >> 29)
    }

    /// Reads a field name at `pos` (on its opening quote), checks Convex's field-name rule and writes it quoted.
    mutating func key() throws(Bail) -> KeyEntry {
        let start = pos &+ 1
        var p = start
        scan: while true {
            // Eight bytes at a time: the first quote, or the first byte that is not plain printable ASCII.
            while p &+ 8 <= end {
                let w = UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self)
                let q = SWAR.zeroBytes(w ^ SWAR.quotes)
                let bad =
                    SWAR.lessThanSpace(w) | (w & SWAR.high) | SWAR.zeroBytes(w ^ SWAR.deletes)
                    | SWAR.zeroBytes(w ^ SWAR.backslashes)
                if q | bad == 0 {
                    p &+= 8
                    continue
                }
                if q != 0 && (bad == 0 || q.trailingZeroBitCount < bad.trailingZeroBitCount) {
                    p &+= q.trailingZeroBitCount >> 3
                    break scan
                }
                p &+= bad.trailingZeroBitCount >> 3
                break
            }
            guard p < end else { throw Bail() }
            let b = base[p]
            if b == quote { break }
            // Field names are printable ASCII only; a backslash starts an escape.
            if b == backslash { return try escapedKey() }
            if b &- 0x20 > 0x5E { throw Bail() }
            p &+= 1
        }
        let length = p &- start
        if length > ConvexLimits.maxFieldNameLength || (length > 0 && base[start] == UInt8(ascii: "$")) {
            throw Bail()
        }
        out.appendSmall(base + pos, count: length &+ 2)
        pos = p &+ 1
        size &+= length &+ 1
        return KeyEntry(start: start, length: length, escaped: false)
    }

    mutating func escapedKey() throws(Bail) -> KeyEntry {
        let start = pos &+ 1
        var decoded = takeScratch()
        defer { scratch = decoded }
        pos = start
        try decodeString(into: &decoded)
        let length = decoded.count
        if length > ConvexLimits.maxFieldNameLength || decoded.first == UInt8(ascii: "$") { throw Bail() }
        for b in decoded where b < 0x20 || b > 0x7E { throw Bail() }
        writeQuoted(decoded)
        size &+= length &+ 1
        // Decoded names live in `keyStore` for the duplicate check.
        let stored = keyStore.count
        decoded.withUnsafeBufferPointer { keyStore.append($0.baseAddress!, count: $0.count) }
        return KeyEntry(start: stored, length: length, escaped: true)
    }
}
