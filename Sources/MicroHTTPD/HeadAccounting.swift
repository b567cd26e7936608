#if canImport(Glibc)
    import Glibc
#endif

/// Accounts for every byte of a request's head as libmicrohttpd 0.9.75 parsed it: each is part of the request line,
/// part of a header field's name or value, the whitespace before a value, or a line ending. A head with a byte left
/// over is refused before anything reads its fields.
///
/// libmicrohttpd parses a head in place in its read buffer: it overwrites each line's CRLF (or bare LF) and each
/// field's colon with NUL, and hands out names and values as pointers into the buffer whose lengths stop at the first
/// NUL. So a NUL the client sent ends a value early and hides the rest of its line (`X-API-Key: right\0wrong` reads as
/// `right`); a CR not followed by LF stays inside a value; whitespace before a colon stays in the name
/// (`Transfer-Encoding : chunked` is a field the server never looks up, which a proxy in front may honour); and a
/// field folded onto a continuation line is joined to its name and copied out of the buffer. The head's extent is
/// `MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE` bytes from the method, through the blank line.
///
/// A NUL right before a line's LF cannot be told from a CR there; it hides nothing.
struct HeadAccounting {
    private let start: UnsafeRawPointer
    private let end: UnsafeRawPointer
    /// The first byte not accounted for yet.
    private var position: UnsafeRawPointer
    /// Why the head is refused, once a byte is found that nothing accounts for.
    private(set) var rejection: HTTPServerRejection?

    /// The request-target as the URI log callback saw it, before libmicrohttpd decoded it in place.
    struct Target {
        /// Where it starts in the head, and its length up to its first NUL.
        var bytes: UnsafeRawBufferPointer
        /// Whether it held a CR (never followed by LF: that would have ended the line).
        var hasCarriageReturn: Bool

        init(_ uri: UnsafePointer<CChar>, count: Int) {
            bytes = UnsafeRawBufferPointer(start: uri, count: count)
            hasCarriageReturn = memchr(uri, 13, count) != nil
        }
    }

    /// Accounts for the request line: `head` starts at the method and ends after the blank line; `target` is `nil`
    /// when the URI log callback did not see it; `version` points into `head`.
    init(head: UnsafeRawBufferPointer, target: Target?, version: UnsafeRawPointer) {
        // An empty head has no base address; one byte of a fixed address stands for it, and fails every check below.
        start = head.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        end = start + head.count
        position = start
        guard start <= version, version < end else {
            rejection = .invalidCharacterInHead
            return
        }
        if let target {
            // `METHOD SP+ target SP version`: libmicrohttpd replaced the space after the method and the one before the
            // version with NUL, and skipped any further spaces before the target.
            let methodEnd = firstNUL(from: start)
            guard memchr(start, 13, methodEnd - start) == nil else {
                rejection = .invalidCharacterInHead
                return
            }
            var next = methodEnd + 1
            while next < end, next.load(as: UInt8.self) == 32 { next += 1 }
            guard let targetStart = target.bytes.baseAddress, next == targetStart,
                targetStart + target.bytes.count + 1 == version, !target.hasCarriageReturn
            else {
                rejection = .invalidCharacterInHead
                return
            }
        }
        position = firstNUL(from: version)
    }

    /// Accounts for the next header field, as libmicrohttpd lists them (in the order received).
    mutating func field(name: UnsafeRawPointer, nameCount: Int, value: UnsafeRawPointer, valueCount: Int) {
        guard rejection == nil else { return }
        guard start <= name, name + nameCount < end else {
            // libmicrohttpd copies a name out of its buffer only to join a continuation line to it.
            rejection = .obsoleteLineFolding
            return
        }
        guard isLineEnding(from: position, to: name, lengths: 1...2) else {
            rejection = .invalidCharacterInHead
            return
        }
        guard memchr(name, 13, nameCount) == nil else {
            rejection = .invalidCharacterInHead
            return
        }
        guard nameCount > 0, allTokenBytes(name, count: nameCount) else {
            rejection = .invalidFieldName
            return
        }
        // The colon (now NUL), then the whitespace libmicrohttpd skipped before the value.
        var next = name + nameCount + 1
        while next < value, next < end, next.load(as: UInt8.self) == 32 || next.load(as: UInt8.self) == 9 { next += 1 }
        guard next == value, value + valueCount < end, memchr(value, 13, valueCount) == nil else {
            rejection = .invalidCharacterInHead
            return
        }
        position = value + valueCount
    }

    /// Accounts for the end of the head, after the last field: its line ending and the blank line. Returns the
    /// rejection, if any byte was left over.
    mutating func finish() -> HTTPServerRejection? {
        if rejection == nil, !isLineEnding(from: position, to: end, lengths: 2...4) {
            rejection = .invalidCharacterInHead
        }
        return rejection
    }

    // The scans below are loops over pointers and C calls, not Collection algorithms: a debug build runs those
    // unspecialized, with a heap allocation per byte, on every request (Benchmarks/thresholds.json).

    /// Whether `from..<to` is all NUL and `lengths` long: what libmicrohttpd left of line endings (CRLF or LF each).
    private func isLineEnding(from: UnsafeRawPointer, to: UnsafeRawPointer, lengths: ClosedRange<Int>) -> Bool {
        guard from <= to, to - from >= lengths.lowerBound, to - from <= lengths.upperBound else { return false }
        var next = from
        while next < to {
            if next.load(as: UInt8.self) != 0 { return false }
            next += 1
        }
        return true
    }

    /// The first NUL from `pointer` on, or the head's end.
    private func firstNUL(from pointer: UnsafeRawPointer) -> UnsafeRawPointer {
        guard let found = memchr(pointer, 0, end - pointer) else { return end }
        return UnsafeRawPointer(found)
    }

    /// Whether the `count` bytes at `pointer` are all ``isTokenByte(_:)``.
    private func allTokenBytes(_ pointer: UnsafeRawPointer, count: Int) -> Bool {
        var offset = 0
        while offset < count {
            if !Self.isTokenByte(pointer.load(fromByteOffset: offset, as: UInt8.self)) { return false }
            offset += 1
        }
        return true
    }

    /// A `tchar` of RFC 9110 §5.6.2, the characters of a field name: ``!#$%&'*+-.^_`|~``, digits and letters (one
    /// bit each in two masks, for bytes 0-63 and 64-127).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        let low: UInt64 = 0x03ff_6cfa_0000_0000
        let high: UInt64 = 0x57ff_ffff_c7ff_fffe
        if byte < 64 { return (low &>> UInt64(byte)) & 1 == 1 }
        if byte < 128 { return (high &>> UInt64(byte - 64)) & 1 == 1 }
        return false
    }
}
