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
        defer { t.deallocate() }
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
        appendSmall(s.utf8Start, count: s.utf8CodeUnitCount)
    }

    /// For the short runs that dominate JSON (keys, numbers, short strings): word copies beat a call to `memmove`.
    @inline(__always) mutating func appendSmall(_ src: UnsafePointer<UInt8>, count n: Int) {
        if n > 64 {
            append(src, count: n)
            return
        }
        reserve(n)
        let dst = UnsafeMutableRawPointer(ptr + count)
        let from = UnsafeRawPointer(src)
        var i = 0
        while i &+ 8 <= n {
            dst.storeBytes(of: from.loadUnaligned(fromByteOffset: i, as: UInt64.self), toByteOffset: i, as: UInt64.self)
            i &+= 8
        }
        while i < n {
            dst.storeBytes(of: from.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
            i &+= 1
        }
        count &+= n
    }
}

/// The field names of the objects being read, innermost last.
struct KeyStack {
    var ptr = UnsafeMutablePointer<StreamingTranscoder.KeyEntry>.allocate(capacity: 64)
    var count = 0
    var capacity = 64

    func deallocate() { ptr.deallocate() }

    subscript(i: Int) -> StreamingTranscoder.KeyEntry { ptr[i] }

    @inline(__always) mutating func push(_ e: StreamingTranscoder.KeyEntry) {
        if count == capacity {
            let bigger = UnsafeMutablePointer<StreamingTranscoder.KeyEntry>.allocate(capacity: capacity * 2)
            bigger.moveInitialize(from: ptr, count: count)
            ptr.deallocate()
            ptr = bigger
            capacity *= 2
        }
        (ptr + count).initialize(to: e)
        count &+= 1
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
    struct KeyEntry {
        /// Offset of the name in the input, or in `keyStore` when it was escaped.
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
    private var keys = KeyStack()
    private var keyStore: OutputBuffer
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

    @inline(__always) private mutating func skipWhitespace() {
        // Compact JSON has none: one comparison settles the common case.
        while pos < end {
            let b = base[pos]
            if b > 0x20 { return }
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
        out.appendSmall(base + pos, count: n)
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

    @inline(__always) private func keyBytes(_ k: KeyEntry) -> UnsafePointer<UInt8> {
        k.escaped ? UnsafePointer(keyStore.ptr + k.start) : base + k.start
    }

    /// Bytewise order of two keys, eight bytes at a time where the input allows the loads.
    @inline(__always) private func keyLess(_ a: KeyEntry, _ b: KeyEntry) -> Bool {
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

    private func keyEqual(_ a: KeyEntry, _ b: KeyEntry) -> Bool {
        a.length == b.length && memcmp(keyBytes(a), keyBytes(b), a.length) == 0
    }

    private func keyHash(_ k: KeyEntry) -> UInt64 {
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
    private mutating func key() throws(Bail) -> KeyEntry {
        let start = pos &+ 1
        var p = start
        while true {
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
        // Decoded names live in `keyStore` for the duplicate check.
        let stored = keyStore.count
        decoded.withUnsafeBufferPointer { keyStore.append($0.baseAddress!, count: $0.count) }
        return KeyEntry(start: stored, length: length, escaped: true)
    }

    // MARK: Wrappers

    private enum WrapperKind { case integer, float, bytes }

    private static func littleEndianWord(_ text: StaticString) -> UInt64 {
        var w: UInt64 = 0
        for i in 0..<text.utf8CodeUnitCount { w |= UInt64(text.utf8Start[i]) << (8 * UInt64(i)) }
        return w
    }
    private static let integerKey = littleEndianWord("$integer")
    private static let floatKey = littleEndianWord("$float\"")
    private static let bytesKey = littleEndianWord("$bytes\"")

    /// Reads `{"$integer"|"$float"|"$bytes": "<base64>"}` with `pos` on the key's opening quote.
    private mutating func wrapper() throws(Bail) {
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
        let p = base + start
        @inline(__always) func v(_ i: Int) -> UInt64 { UInt64(b64[Int(p[i])]) }
        let v0 = v(0), v1 = v(1), v2 = v(2), v3 = v(3), v4 = v(4), v5 = v(5)
        let v6 = v(6), v7 = v(7), v8 = v(8), v9 = v(9), v10 = v(10)
        // 0xFF marks a non-alphabet byte; the final sextet's two low bits must be zero (canonical).
        let invalid = v0 | v1 | v2 | v3 | v4 | v5 | v6 | v7 | v8 | v9 | v10
        guard invalid & 0x80 == 0, v10 & 0x03 == 0 else { throw Bail() }
        // The 64 bits, big-endian, combined in independent groups.
        let a = v0 << 58 | v1 << 52 | v2 << 46 | v3 << 40
        let b = v4 << 34 | v5 << 28 | v6 << 22 | v7 << 16
        let c = v8 << 10 | v9 << 4 | v10 >> 2
        return (a | b | c).byteSwapped
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
        if magnitude < 10 {
            out.put(UInt8(truncatingIfNeeded: magnitude) &+ 0x30)
            return
        }
        let digits = Self.decimalDigits(magnitude)
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
    @inline(__always) private static func decimalDigits(_ v: UInt64) -> Int {
        // Estimate from the bit length (log10(2) ≈ 1233/4096), then correct by one comparison.
        let bits = 64 &- v.leadingZeroBitCount
        let estimate = (bits &* 1233) >> 12
        return estimate &+ (v >= powersOf10[estimate] ? 1 : 0)
    }

    private static let powersOf10: [UInt64] = (0..<20).map { i in (0..<i).reduce(UInt64(1)) { p, _ in p &* 10 } }

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
