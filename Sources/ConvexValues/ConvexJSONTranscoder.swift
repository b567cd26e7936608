import Foundation

/// Renders Convex JSON bytes in another ``ConvexOutputMode`` without building a value tree.
///
/// The transcoder reads its input once, checking every rule ``ConvexValue/init(convexJSON:)-(Bytes)`` checks (JSON
/// syntax, UTF-8, wrappers, field names, duplicate fields, retired types, nesting, array length, field count and
/// total size) while writing the output. Object keys keep their input order (Convex sends them sorted).
/// When the input is invalid, the error is the one the value parser reports for the same bytes, so it names the
/// same JSON path and message.
public enum ConvexJSONTranscoder {
    /// Renders Convex JSON in `mode`.
    /// - Parameters:
    ///   - convexJSON: Convex JSON (`convex_encoded_json`) bytes.
    ///   - mode: the output mode; `plain` by default.
    /// - Returns: the JSON bytes in `mode`.
    /// - Throws: `ConvexValueError` naming the JSON path of the first bad value.
    public static func render<Bytes: Collection>(
        _ convexJSON: Bytes,
        mode: ConvexOutputMode = .plain
    ) throws(ConvexValueError) -> [UInt8] where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        try render(convexJSON, mode: mode, appendingTo: &out)
        return out
    }

    /// Renders Convex JSON in `mode`, appending to `out`. On error `out` is left unchanged.
    /// - Throws: `ConvexValueError` naming the JSON path of the first bad value.
    public static func render<Bytes: Collection>(
        _ convexJSON: Bytes,
        mode: ConvexOutputMode = .plain,
        appendingTo out: inout [UInt8]
    ) throws(ConvexValueError) where Bytes.Element == UInt8 {
        let result: Result<Void, ConvexValueError>
        if let r = convexJSON.withContiguousStorageIfAvailable({ render(buffer: $0, mode: mode, into: &out) }) {
            result = r
        } else {
            result = Array(convexJSON).withUnsafeBufferPointer { render(buffer: $0, mode: mode, into: &out) }
        }
        try result.get()
    }

    static func render(
        buffer: UnsafeBufferPointer<UInt8>,
        mode: ConvexOutputMode,
        into out: inout [UInt8]
    ) -> Result<Void, ConvexValueError> {
        if fastRender(buffer: buffer, mode: mode, into: &out) {
            return .success(())
        }
        // The single-pass reader only knows that the input is not one it can stream; the value parser explains why
        // with a path and message. Should the parser accept the input after all (a case the streaming reader leaves
        // to it, such as escapes inside a wrapper's base64), render the parsed value.
        switch ConvexJSONParser.parse(buffer) {
        case .failure(let error):
            return .failure(error)
        case .success(let value):
            value.appendJSON(mode: mode, to: &out)
            return .success(())
        }
    }

    /// Streams `buffer` to `out`; false, with `out` unchanged, when the input must go through the value parser.
    static func fastRender(buffer: UnsafeBufferPointer<UInt8>, mode: ConvexOutputMode, into out: inout [UInt8]) -> Bool {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return false }
        var t = StreamingTranscoder(base: base, end: buffer.count, mode: mode)
        defer { t.out.deallocate() }
        do throws(Bail) {
            try t.run()
        } catch {
            return false
        }
        out.append(contentsOf: UnsafeBufferPointer(start: t.out.ptr, count: t.out.count))
        return true
    }
}

/// The streaming reader gives up; the value parser then reports the precise error.
struct Bail: Error {}

/// A growable byte buffer written through a raw pointer, so appends compile to stores without checks.
struct OutputBuffer {
    var ptr: UnsafeMutablePointer<UInt8>
    var count = 0
    var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        ptr = .allocate(capacity: self.capacity)
    }

    func deallocate() { ptr.deallocate() }

    @inline(__always) mutating func reserve(_ n: Int) {
        if count &+ n > capacity { grow(count &+ n) }
    }

    @inline(never) mutating func grow(_ minimum: Int) {
        let newCapacity = max(capacity &* 2, minimum)
        let newPtr = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newPtr.update(from: ptr, count: count)
        ptr.deallocate()
        ptr = newPtr
        capacity = newCapacity
    }

    /// Appends without a capacity check; call `reserve` first.
    @inline(__always) mutating func put(_ b: UInt8) {
        ptr[count] = b
        count &+= 1
    }

    @inline(__always) mutating func append(_ b: UInt8) {
        reserve(1)
        put(b)
    }

    @inline(__always) mutating func append(_ src: UnsafePointer<UInt8>, count n: Int) {
        reserve(n)
        (ptr + count).update(from: src, count: n)
        count &+= n
    }

    mutating func append(_ s: StaticString) {
        append(s.utf8Start, count: s.utf8CodeUnitCount)
    }
}

/// Lookup tables shared by the streaming reader, allocated once and never freed.
enum TranscoderTables {
    /// Base64 character → sextet, 0xFF for anything else.
    nonisolated(unsafe) static let base64Reverse: UnsafePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        p.initialize(repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            p[Int(c)] = UInt8(i)
        }
        return UnsafePointer(p)
    }()

    /// String byte classes: 0 plain ASCII, 1 quote, 2 backslash, 3 control, 4 non-ASCII.
    nonisolated(unsafe) static let stringClass: UnsafePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        for i in 0..<256 {
            p[i] = i < 0x20 ? 3 : i >= 0x80 ? 4 : i == 0x22 ? 1 : i == 0x5C ? 2 : 0
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

private let quote = UInt8(ascii: "\"")
private let backslash = UInt8(ascii: "\\")

struct StreamingTranscoder {
    private struct KeyEntry {
        var hash: UInt64
        var start: Int
        var length: Int
        var escaped: Bool
    }

    let base: UnsafePointer<UInt8>
    let end: Int
    let mode: ConvexOutputMode
    var pos = 0
    var out: OutputBuffer
    private var depth = 0
    private var size = 0
    private var keys: [KeyEntry] = []
    private var scratch: [UInt8] = []
    private let b64: UnsafePointer<UInt8>
    private let cls: UnsafePointer<UInt8>
    private let pairs: UnsafePointer<UInt8>

    init(base: UnsafePointer<UInt8>, end: Int, mode: ConvexOutputMode) {
        self.base = base
        self.end = end
        self.mode = mode
        out = OutputBuffer(capacity: end + end / 8 + 64)
        b64 = TranscoderTables.base64Reverse
        cls = TranscoderTables.stringClass
        pairs = TranscoderTables.digitPairs
        keys.reserveCapacity(64)
    }

    mutating func run() throws(Bail) {
        skipWhitespace()
        try value()
        skipWhitespace()
        if pos != end || size > ConvexLimits.maxValueSize { throw Bail() }
    }

    @inline(__always) private mutating func skipWhitespace() {
        while pos < end {
            let b = base[pos]
            if b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { pos &+= 1 } else { return }
        }
    }

    @inline(__always) private static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    private mutating func value() throws(Bail) {
        guard pos < end else { throw Bail() }
        switch base[pos] {
        case UInt8(ascii: "{"): try object()
        case UInt8(ascii: "["): try array()
        case quote: try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw Bail()
        }
    }

    private mutating func literal(_ word: StaticString) throws(Bail) {
        let n = word.utf8CodeUnitCount
        guard end &- pos >= n, memcmp(base + pos, word.utf8Start, n) == 0 else { throw Bail() }
        out.append(base + pos, count: n)
        pos &+= n
        size &+= 1
    }

    // MARK: Containers

    private mutating func array() throws(Bail) {
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

    private mutating func object() throws(Bail) {
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
        var hashSet: Set<UInt64>? = nil
        var count = 0
        while true {
            guard pos < end, base[pos] == quote else { throw Bail() }
            count &+= 1
            if count > ConvexLimits.maxObjectFields { throw Bail() }
            let entry = try key()
            // Duplicate check: linear for small objects, hashed beyond.
            var collides = false
            if count <= 32 {
                var i = frame
                while i < keys.count {
                    if keys[i].hash == entry.hash { collides = true; break }
                    i &+= 1
                }
            } else {
                if hashSet == nil { hashSet = Set(keys[frame...].map(\.hash)) }
                collides = !(hashSet!.insert(entry.hash).inserted)
            }
            if collides { try checkDistinct(entry, frame: frame) }
            keys.append(entry)
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
                keys.removeSubrange(frame...)
                depth &-= 1
                return
            } else {
                throw Bail()
            }
        }
    }

    /// Same hash as an earlier key of this object: a duplicate (bail) unless the bytes differ.
    private func checkDistinct(_ entry: KeyEntry, frame: Int) throws(Bail) {
        for other in keys[frame...] where other.hash == entry.hash {
            if other.escaped || entry.escaped { throw Bail() }
            if other.length == entry.length && memcmp(base + other.start, base + entry.start, entry.length) == 0 {
                throw Bail()
            }
        }
    }

    @inline(__always) private static func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
        let x = (h ^ w) &* 0x9E37_79B9_7F4A_7C15
        return x ^ (x >> 29)
    }

    private static func hash(_ p: UnsafePointer<UInt8>, _ n: Int) -> UInt64 {
        var h = UInt64(truncatingIfNeeded: n) &* 0xC2B2_AE3D_27D4_EB4F
        var i = 0
        while i &+ 8 <= n {
            h = mix(h, UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
            i &+= 8
        }
        if i < n {
            var w: UInt64 = 0
            var shift: UInt64 = 0
            while i < n {
                w |= UInt64(p[i]) << shift
                shift &+= 8
                i &+= 1
            }
            h = mix(h, w)
        }
        return h
    }

    /// Reads a field name at `pos` (on its opening quote), checks Convex's field-name rule and writes it quoted.
    private mutating func key() throws(Bail) -> KeyEntry {
        let start = pos &+ 1
        var p = start
        while true {
            guard p < end else { throw Bail() }
            let b = base[p]
            if b == quote { break }
            // Field names are printable ASCII only; a backslash starts an escape.
            if b == backslash { return try escapedKey() }
            if b < 0x20 || b > 0x7E { throw Bail() }
            p &+= 1
        }
        let length = p &- start
        if length > ConvexLimits.maxFieldNameLength || (length > 0 && base[start] == UInt8(ascii: "$")) {
            throw Bail()
        }
        out.append(base + pos, count: length &+ 2)
        pos = p &+ 1
        size &+= length &+ 1
        return KeyEntry(hash: Self.hash(base + start, length), start: start, length: length, escaped: false)
    }

    private mutating func escapedKey() throws(Bail) -> KeyEntry {
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
        let h = decoded.withUnsafeBufferPointer { Self.hash($0.baseAddress!, $0.count) }
        return KeyEntry(hash: h, start: start, length: length, escaped: true)
    }

    // MARK: Wrappers

    private enum WrapperKind { case integer, float, bytes }

    /// Reads `{"$integer"|"$float"|"$bytes": "<base64>"}` with `pos` on the key's opening quote.
    private mutating func wrapper() throws(Bail) {
        let k = base + (pos &+ 1)
        let avail = end &- pos &- 1
        let kind: WrapperKind
        if avail >= 9 && memcmp(k, ("$integer\"" as StaticString).utf8Start, 9) == 0 {
            kind = .integer
            pos &+= 10
        } else if avail >= 7 && memcmp(k, ("$float\"" as StaticString).utf8Start, 7) == 0 {
            kind = .float
            pos &+= 8
        } else if avail >= 7 && memcmp(k, ("$bytes\"" as StaticString).utf8Start, 7) == 0 {
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
        while p < end && base[p] != quote {
            if base[p] == backslash { throw Bail() }
            p &+= 1
        }
        guard p < end else { throw Bail() }
        let textEnd = p
        pos = p &+ 1
        skipWhitespace()
        guard pos < end, base[pos] == UInt8(ascii: "}") else { throw Bail() }
        pos &+= 1
        switch kind {
        case .integer:
            let bits = try decode8(textStart, textEnd)
            size &+= 9
            writeInt64(Int64(bitPattern: bits))
        case .float:
            let d = Double(bitPattern: try decode8(textStart, textEnd))
            guard d.needsFloatWrapper else { throw Bail() }
            size &+= 9
            writeSpecialFloat(d)
        case .bytes:
            try bytesWrapper(textStart, textEnd)
        }
    }

    /// Decodes base64 of exactly eight bytes (11 characters, optionally one `=`), little-endian.
    private func decode8(_ start: Int, _ end: Int) throws(Bail) -> UInt64 {
        var n = end &- start
        if n == 12 && base[start &+ 11] == UInt8(ascii: "=") { n = 11 }
        guard n == 11 else { throw Bail() }
        var acc: UInt64 = 0  // the first 64 of 66 bits, big-endian
        var invalid: UInt8 = 0
        for i in 0..<10 {
            let v = b64[Int(base[start &+ i])]
            invalid |= v
            acc = acc << 6 | UInt64(v & 0x3F)
        }
        let last = b64[Int(base[start &+ 10])]
        invalid |= last
        // 0xFF marks a non-alphabet byte; the final sextet's two low bits must be zero (canonical).
        guard invalid & 0x80 == 0, last & 0x03 == 0 else { throw Bail() }
        acc = acc << 4 | UInt64(last >> 2)
        return acc.byteSwapped
    }

    private mutating func bytesWrapper(_ start: Int, _ end: Int) throws(Bail) {
        var bodyEnd = end
        var pad = 0
        while bodyEnd > start && base[bodyEnd &- 1] == UInt8(ascii: "=") {
            bodyEnd &-= 1
            pad &+= 1
        }
        let body = bodyEnd &- start
        if pad > 2 || (pad > 0 && (body &+ pad) & 3 != 0) || body & 3 == 1 { throw Bail() }
        var invalid: UInt8 = 0
        var i = start
        while i < bodyEnd {
            invalid |= b64[Int(base[i])]
            i &+= 1
        }
        guard invalid & 0x80 == 0 else { throw Bail() }
        let rem = body & 3
        if rem != 0 {
            let last = b64[Int(base[bodyEnd &- 1])]
            if (rem == 2 && last & 0x0F != 0) || (rem == 3 && last & 0x03 != 0) { throw Bail() }
        }
        let decoded = body / 4 * 3 + (rem == 0 ? 0 : rem &- 1)
        size &+= decoded &+ 2
        let padding = rem == 0 ? 0 : 4 &- rem
        if mode == .encoded { out.append(#"{"$bytes":"#) }
        out.reserve(body &+ padding &+ 2)
        out.put(quote)
        out.append(base + start, count: body)
        for _ in 0..<padding { out.put(UInt8(ascii: "=")) }
        out.put(quote)
        if mode == .encoded { out.append(UInt8(ascii: "}")) }
    }

    // MARK: Scalars

    private mutating func writeInt64(_ v: Int64) {
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

    private mutating func writeWrapper(_ prefix: StaticString, _ bits: UInt64) {
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

    private mutating func writeDecimal(_ v: Int64) {
        out.reserve(20)
        var magnitude = v.magnitude
        if v < 0 { out.put(UInt8(ascii: "-")) }
        // Digits are produced backwards into a small stack buffer, two at a time.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { tmp in
            var i = 20
            while magnitude >= 100 {
                let r = Int(magnitude % 100)
                magnitude /= 100
                i &-= 2
                tmp[i] = pairs[2 &* r]
                tmp[i &+ 1] = pairs[2 &* r &+ 1]
            }
            if magnitude >= 10 {
                let r = Int(magnitude)
                i &-= 2
                tmp[i] = pairs[2 &* r]
                tmp[i &+ 1] = pairs[2 &* r &+ 1]
            } else {
                i &-= 1
                tmp[i] = UInt8(truncatingIfNeeded: magnitude) &+ 0x30
            }
            (out.ptr + out.count).update(from: tmp.baseAddress! + i, count: 20 &- i)
            out.count &+= 20 &- i
        }
    }

    private mutating func writeSpecialFloat(_ d: Double) {
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
    private mutating func number() throws(Bail) {
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
                    out.append(base + fracStart, count: fracLength)
                    return
                }
            } else if intLength &+ fracLength <= 15 {
                out.reserve(intLength &+ fracLength &+ 3)
                if negative { out.put(UInt8(ascii: "-")) }
                out.append(base + intStart, count: intLength)
                out.put(UInt8(ascii: "."))
                if fracLength == 0 {
                    out.put(UInt8(ascii: "0"))
                } else {
                    out.append(base + fracStart, count: fracLength)
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
    private mutating func string() throws(Bail) {
        let start = pos
        var p = pos &+ 1
        while true {
            // Eight bytes at a time while none is a quote, backslash, control or non-ASCII byte.
            while p &+ 8 <= end {
                let w = UnsafeRawPointer(base + p).loadUnaligned(as: UInt64.self)
                let high: UInt64 = 0x8080_8080_8080_8080
                let ones: UInt64 = 0x0101_0101_0101_0101
                let q = w ^ (ones &* 0x22)
                let bs = w ^ (ones &* 0x5C)
                let special = ((w &- ones &* 0x20) | (q &- ones) | (bs &- ones) | w) & high
                if special != 0 { break }
                p &+= 8
            }
            guard p < end else { throw Bail() }
            let b = base[p]
            switch cls[Int(b)] {
            case 0:
                p &+= 1
            case 1:
                let length = p &- start &- 1
                out.append(base + start, count: length &+ 2)
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
    private mutating func takeScratch() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &scratch)
        taken.removeAll(keepingCapacity: true)
        return taken
    }

    /// Validates one multi-byte UTF-8 sequence starting at `p`; returns the index after it.
    @inline(__always) private func skipUTF8(_ p: Int) throws(Bail) -> Int {
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
    private mutating func decodeString(into bytes: inout [UInt8]) throws(Bail) {
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

    private mutating func hex4() throws(Bail) -> UInt32 {
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

    private func appendUTF8(_ scalar: UInt32, to bytes: inout [UInt8]) {
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
    private mutating func writeQuoted(_ bytes: [UInt8]) {
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
