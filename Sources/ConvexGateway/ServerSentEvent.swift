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
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 48)
        if let retry {
            out.append(contentsOf: "retry: \(retry)\n".utf8)
        }
        if let event {
            out.append(contentsOf: "event: ".utf8)
            out.append(contentsOf: Self.singleLine(event))
            out.append(0x0A)
        }
        if let id {
            out.append(contentsOf: "id: ".utf8)
            out.append(contentsOf: Self.singleLine(id))
            out.append(0x0A)
        }
        out.append(contentsOf: "data: ".utf8)
        // The usual data (JSON the gateway wrote: line breaks escaped) is one line, copied as it is.
        if !data.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
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

    /// A comment line, ignored by clients: used for heartbeats.
    package static func comment(_ text: String) -> [UInt8] {
        Array(":".utf8) + singleLine(text.isEmpty ? "" : " " + text) + [0x0A, 0x0A]
    }

    private static func singleLine(_ text: String) -> [UInt8] {
        text.utf8.filter { $0 != 0x0A && $0 != 0x0D && $0 != 0 }
    }
}
