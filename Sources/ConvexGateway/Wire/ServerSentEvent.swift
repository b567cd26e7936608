/// One Server-Sent Event, framed as the WHATWG event-stream format requires: every line of `data` becomes its own
/// `data:` line (CR, LF and CRLF all end a line), and `event`/`id` are kept to a single line, so no payload can
/// break the framing.
package struct ServerSentEvent: Sendable, Hashable {
    /// The `event:` names the gateway sends besides unnamed `data:` events (docs/streams.md). None is `error`, the
    /// name an `EventSource` gives its own connection errors, so a page can tell the two apart.
    package enum Name {
        /// A transition of a multi-subscription stream.
        package static let transition = "transition"
        /// A JSON Patch of a `/subscribe/<function>` stream's value.
        package static let patch = "patch"
        /// A `/subscribe/<function>` stream's query failed (`{"error":{…}}`); the stream stays open.
        package static let failure = "failure"
        /// The whole stream failed (its credentials were refused, `{"error":{…}}`) and ends.
        package static let fatal = "fatal"
    }

    package var event: String?
    package var id: String?
    package var data: [UInt8]
    package var retry: Int?

    package init(event: String? = nil, id: String? = nil, data: [UInt8], retry: Int? = nil) {
        self.event = event
        self.id = id
        self.data = data
        self.retry = retry
    }

    package func encoded() -> [UInt8] {
        Self.encoded(event: event, id: id.map { Array($0.utf8) }, data: data, retry: retry)
    }

    /// The bytes of an event whose `id` is given as bytes (the stream wire writes its resume ids so, once per stream and
    /// delivery), framed by the same rules as ``encoded()``.
    static func encoded(event: String?, id: [UInt8]?, data: [UInt8], retry: Int? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + (id?.count ?? 0) + 48)
        if let retry {
            out.append(contentsOf: "retry: \(retry)\n".utf8)
        }
        if let event {
            out.append(contentsOf: "event: ".utf8)
            out.append(contentsOf: singleLine(Array(event.utf8)))
            out.append(0x0A)
        }
        if let id {
            out.append(contentsOf: "id: ".utf8)
            out.append(contentsOf: singleLine(id))
            out.append(0x0A)
        }
        out.append(contentsOf: "data: ".utf8)
        // The usual data (JSON the gateway wrote: line breaks escaped) is one line, copied as it is.
        if !breaksLine(data) {
            out.append(contentsOf: data)
            out.append(contentsOf: "\n\n".utf8)
            return out
        }
        var i = 0
        while i < data.count {
            let b = data[i]
            if b == 0x0D || b == 0x0A {
                out.append(contentsOf: "\ndata: ".utf8)
                if b == 0x0D && i + 1 < data.count && data[i + 1] == 0x0A { i += 1 }
            } else if b != 0 {
                out.append(b)
            }
            i += 1
        }
        out.append(contentsOf: "\n\n".utf8)
        return out
    }

    /// The bytes of an event whose `id` and `data` are written in place, each by its closure, into the one buffer the
    /// event is (the stream wire's transitions, once per stream and delivery: no copy of either), framed by the same
    /// rules as ``encoded()``: should either hold a line break after all, the event is framed again from copies.
    static func encoded(
        event: String, capacity: Int, id writeID: (inout [UInt8]) -> Void, data writeData: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(capacity + event.utf8.count + 24)
        out += "event: ".utf8
        out += event.utf8
        out += "\nid: ".utf8
        let idStart = out.count
        writeID(&out)
        let idEnd = out.count
        out += "\ndata: ".utf8
        let dataStart = out.count
        writeData(&out)
        let dataEnd = out.count
        out += "\n\n".utf8
        let id = out[idStart..<idEnd]
        let data = out[dataStart..<dataEnd]
        if event.utf8.contains(where: isLineBreak) || breaksLine(id) || breaksLine(data) {
            return encoded(event: event, id: Array(id), data: Array(data))
        }
        return out
    }

    /// A comment line, ignored by clients: used for heartbeats.
    package static func comment(_ text: String) -> [UInt8] {
        Array(":".utf8) + singleLine(Array((text.isEmpty ? "" : " " + text).utf8)) + [0x0A, 0x0A]
    }

    /// Whether `bytes` hold a CR, an LF or a NUL: what a field's line must not.
    private static func breaksLine(_ bytes: [UInt8]) -> Bool {
        breaksLine(bytes[...])
    }

    /// (Read through a buffer pointer: this runs over every byte of every event a stream of several subscriptions
    /// gets.)
    private static func breaksLine(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            // CR, LF and NUL are all below 14: one comparison for nearly every byte.
            buffer.contains { $0 < 14 && isLineBreak($0) }
        }
    }

    private static func isLineBreak(_ byte: UInt8) -> Bool {
        byte == 0x0D || byte == 0x0A || byte == 0
    }

    private static func singleLine(_ bytes: [UInt8]) -> [UInt8] {
        breaksLine(bytes) ? bytes.filter { $0 != 0x0A && $0 != 0x0D && $0 != 0 } : bytes
    }
}
