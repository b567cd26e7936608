import Testing

@testable import MicroHTTPD

/// A request head as libmicrohttpd 0.9.75 leaves it in its read buffer once parsed (`get_next_header_line`,
/// `parse_initial_message_line`, `process_header_line`): line endings and colons overwritten with NUL, names and values
/// as offsets with lengths up to their first NUL. Folded lines are left to the test that moves a name by hand.
private struct ParsedHead {
    var buffer: [UInt8]
    var size = 0
    var version = 0
    var target: (offset: Int, count: Int)?
    var fields: [(name: Int, nameCount: Int, value: Int, valueCount: Int)] = []

    init(_ raw: [UInt8]) {
        buffer = raw
        var lines: [Range<Int>] = []
        var lineStart = 0
        var index = 0
        while index < buffer.count {
            if buffer[index] == 13, index + 1 < buffer.count, buffer[index + 1] == 10 {
                lines.append(lineStart..<index)
                buffer[index] = 0
                buffer[index + 1] = 0
                index += 2
                lineStart = index
                if lines.count > 1, lines.last!.isEmpty { break }
            } else if buffer[index] == 10 {
                lines.append(lineStart..<index)
                buffer[index] = 0
                index += 1
                lineStart = index
                if lines.count > 1, lines.last!.isEmpty { break }
            } else {
                index += 1
            }
        }
        size = index
        let line = lines[0]
        let space = buffer[line].firstIndex(of: 32)!
        buffer[space] = 0
        var uri = space + 1
        while buffer[uri] == 32 { uri += 1 }
        var versionSpace = line.upperBound - 1
        while buffer[versionSpace] == 32, versionSpace > uri { versionSpace -= 1 }
        while buffer[versionSpace] != 32, versionSpace > uri { versionSpace -= 1 }
        buffer[versionSpace] = 0
        version = versionSpace + 1
        target = (uri, buffer[uri...].firstIndex(of: 0)! - uri)
        for field in lines.dropFirst() where !field.isEmpty {
            let stop = buffer[field].firstIndex(of: 0) ?? field.upperBound
            let colon = buffer[field.lowerBound..<stop].firstIndex(of: UInt8(ascii: ":"))!
            buffer[colon] = 0
            var value = colon + 1
            while buffer[value] == 32 || buffer[value] == 9 { value += 1 }
            fields.append(
                (
                    field.lowerBound, buffer[field.lowerBound...].firstIndex(of: 0)! - field.lowerBound, value,
                    buffer[value...].firstIndex(of: 0)! - value
                ))
        }
    }

    init(_ text: String) { self.init(Array(text.utf8)) }

    /// The rejection ``HeadAccounting`` finds, with the fields' names moved to `moved` where given.
    func rejection(movingName moved: Int? = nil) -> HTTPServerRejection? {
        buffer.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!
            let elsewhere = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
            defer { elsewhere.deallocate() }
            let targetBytes = target.map { target in
                HeadAccounting.Target(
                    (base + target.offset).assumingMemoryBound(to: CChar.self), count: target.count)
            }
            var accounting = HeadAccounting(
                head: UnsafeRawBufferPointer(rebasing: bytes[0..<size]), target: targetBytes, version: base + version)
            for (index, field) in fields.enumerated() {
                var name = UnsafeRawPointer(base + field.name)
                if index == moved {
                    elsewhere.copyMemory(from: UnsafeRawBufferPointer(start: name, count: field.nameCount))
                    name = UnsafeRawPointer(elsewhere.baseAddress!)
                }
                accounting.field(
                    name: name, nameCount: field.nameCount, value: base + field.value, valueCount: field.valueCount)
            }
            return accounting.finish()
        }
    }
}

@Suite("Every byte of a request head accounted for")
struct HeadAccountingTests {
    @Test(
        "heads libmicrohttpd parses whole are accepted",
        arguments: [
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /a?b=1 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nX-Empty:\r\n\r\n",
            "GET / HTTP/1.1\nHost: x\n\n",
            "GET / HTTP/1.1\r\nHost: x\n\r\n",
            "GET / HTTP/1.0\r\n\r\n",
            "GET  /  HTTP/1.1\r\nHost: x\r\n\r\n",
            "POST /p HTTP/1.1\r\nHost:x\r\nX-Spaces: \t  \r\nX-Trailing: a \t\r\nX-Tab:\tb c\r\nContent-Length: 2\r\n\r\n",
            "GET / HTTP/1.1\r\nX-Text: caf\u{E9} \u{2603}\r\nX-Symbols: !#$%&'*+-.^_`|~09azAZ\r\n\r\n",
            "GET / HTTP/1.1\r\n!#$%&'*+-.^_`|~: token characters\r\n\r\n",
        ])
    func wholeHeads(_ head: String) {
        #expect(ParsedHead(head).rejection() == nil)
    }

    @Test(
        "a NUL or a bare CR anywhere in the line or a field is a byte left over",
        arguments: [
            Array("GET / HTTP/1.1\r\nX-API-Key: right\0wrong\r\nHost: x\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nHost: x\r\nX-API-Key: right\0wrong\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nX-API-Key: right\0\0\0\0wrong\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nA: v\0\r\nB: w\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nA: v\0\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nX:\0hidden\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nX: a\r\r\n\r\n".utf8),
            Array("GET /hea\0lthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            Array("GET /a\rb HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            Array("GE\0T / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            Array("G\rET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\0junk\r\nHost: x\r\n\r\n".utf8),
        ])
    func strayBytes(_ head: [UInt8]) {
        #expect(ParsedHead(head).rejection() == .invalidCharacterInHead)
    }

    @Test("a NUL right before a line's LF is not told from a CR, and hides nothing")
    func nulBeforeLineFeed() {
        #expect(ParsedHead(Array("GET / HTTP/1.1\nA: v\0\nB: w\n\n".utf8)).rejection() == nil)
    }

    @Test(
        "a name with whitespace, before its colon or inside, or another character no name has, is refused",
        arguments: [
            "GET / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n",
            "GET / HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n",
            "GET / HTTP/1.1\r\nX Header: v\r\n\r\n",
            "GET / HTTP/1.1\r\n Leading: v\r\n\r\n",
            "GET / HTTP/1.1\r\n: no name\r\n\r\n",
            "GET / HTTP/1.1\r\nTransfer-Encoding\u{0B}: chunked\r\n\r\n",
            "GET / HTTP/1.1\r\nX(y): v\r\n\r\n",
            "GET / HTTP/1.1\r\nCaf\u{E9}: v\r\n\r\n",
        ])
    func invalidNames(_ head: String) {
        #expect(ParsedHead(head).rejection() == .invalidFieldName)
    }

    @Test("a name libmicrohttpd copied out of the head is a folded line")
    func foldedLine() {
        // libmicrohttpd joins a continuation line to the field's name, in a copy outside its read buffer.
        let head = ParsedHead("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(head.rejection() == nil)
        #expect(head.rejection(movingName: 1) == .obsoleteLineFolding)
        #expect(head.rejection(movingName: 0) == .obsoleteLineFolding)
    }

    @Test("a head whose parts lie elsewhere than libmicrohttpd leaves them is refused")
    func misplacedParts() {
        var head = ParsedHead("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        head.size -= 3
        #expect(head.rejection() == .invalidCharacterInHead, "the blank line cut short")
        head = ParsedHead("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        head.version = head.size + 1
        #expect(head.rejection() == .invalidCharacterInHead, "the version outside the head")
        head = ParsedHead("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        head.target = nil
        #expect(head.rejection() == nil, "without the URI log callback's target, the line is taken from the version")
    }
}
