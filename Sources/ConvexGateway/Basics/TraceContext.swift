import Logging

/// A W3C Trace Context trace id: 16 bytes, never all zero, written as 32 lower-case hex digits.
package struct TraceID: Sendable, Hashable, CustomStringConvertible {
    package var high: UInt64
    package var low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A new random trace id.
    package static func random() -> TraceID {
        var generator = SystemRandomNumberGenerator()
        while true {
            let id = TraceID(high: generator.next(), low: generator.next())
            if id.high != 0 || id.low != 0 { return id }
        }
    }

    package var description: String { hexDigits(high) + hexDigits(low) }
}

/// A W3C Trace Context span (parent) id: 8 bytes, never all zero, written as 16 lower-case hex digits.
package struct SpanID: Sendable, Hashable, CustomStringConvertible {
    package var value: UInt64

    package init(_ value: UInt64) { self.value = value }

    /// A new random span id.
    package static func random() -> SpanID {
        var generator = SystemRandomNumberGenerator()
        while true {
            let value: UInt64 = generator.next()
            if value != 0 { return SpanID(value) }
        }
    }

    package var description: String { hexDigits(value) }
}

/// A `traceparent` header field (W3C Trace Context, level 1): `00-<trace id>-<parent id>-<flags>`.
package struct TraceParent: Sendable, Hashable {
    package var traceID: TraceID
    package var parentID: SpanID
    /// The trace flags; bit 0 is `sampled`.
    package var flags: UInt8

    package init(traceID: TraceID, parentID: SpanID, flags: UInt8) {
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
    }

    /// Parses a `traceparent` value; `nil` for one the specification says to ignore: a version other than two
    /// lower-case hex digits, or `ff`; version `00` with anything after the flags (a later version may add fields
    /// after a `-`); ids that are not lower-case hex of their length, or all zero; flags that are not two hex digits.
    package init?(_ header: String) {
        var text = Substring(header)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        let bytes = Array(text.utf8)
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"),
            bytes[52] == UInt8(ascii: "-"), let version = hexValue(bytes[0..<2]), version != 0xff,
            version != 0 || bytes.count == 55, bytes.count == 55 || bytes[55] == UInt8(ascii: "-"),
            let high = hexValue(bytes[3..<19]), let low = hexValue(bytes[19..<35]),
            let parent = hexValue(bytes[36..<52]), let flags = hexValue(bytes[53..<55]),
            high != 0 || low != 0, parent != 0
        else { return nil }
        self.init(traceID: TraceID(high: high, low: low), parentID: SpanID(parent), flags: UInt8(flags))
    }

    /// The header's value, version `00`.
    package var header: String {
        let flagDigits = String(flags, radix: 16)
        return "00-\(traceID)-\(parentID)-" + (flags < 16 ? "0" : "") + flagDigits
    }
}

/// The trace of one request: the caller's trace when it sent a valid `traceparent`, else a new one, and the gateway's
/// own span in it.
package struct RequestTrace: Sendable {
    /// The trace of the request whose answer the current task is making, bound by the pipeline's completion while a
    /// later answer runs, so that a warning logged on the request's behalf names it (``addMetadata(to:)``).
    @TaskLocal package static var current: RequestTrace?

    package var traceID: TraceID
    /// The gateway's span for this request.
    package var spanID: SpanID
    /// The caller's span (`traceparent`'s parent id), `nil` when the request started the trace.
    package var parentID: SpanID?
    package var flags: UInt8
    /// The caller's `tracestate`, kept only with a valid `traceparent` and when it looks like one (at most 512
    /// characters of printable ASCII), to hand on unchanged.
    package var traceState: String?

    /// The trace of a request that sent these header fields (either may be missing or malformed: a malformed
    /// `traceparent` starts a new trace, as none does).
    package init(traceparent: String?, tracestate: String?) {
        spanID = .random()
        if let traceparent, let parent = TraceParent(traceparent) {
            traceID = parent.traceID
            parentID = parent.parentID
            flags = parent.flags
            traceState = tracestate.flatMap { state in
                state.utf8.count <= 512 && state.utf8.allSatisfy { (0x20...0x7e).contains($0) } ? state : nil
            }
        } else {
            traceID = .random()
            parentID = nil
            flags = 0x01
            traceState = nil
        }
    }

    /// Adds `trace_id` and `span_id`, as OpenTelemetry's log data model names them.
    package func addMetadata(to metadata: inout Logger.Metadata) {
        metadata["trace_id"] = "\(traceID)"
        metadata["span_id"] = "\(spanID)"
    }

    /// The `traceparent` naming the gateway's span, as a request the gateway makes for this one would send.
    package var traceparent: String {
        TraceParent(traceID: traceID, parentID: spanID, flags: flags).header
    }
}

/// `value` as 16 lower-case hex digits.
private func hexDigits(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

/// The value of lower-case hex digits (at most 16); `nil` if any is not one.
private func hexValue(_ digits: ArraySlice<UInt8>) -> UInt64? {
    var value: UInt64 = 0
    for digit in digits {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(digit - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(digit - UInt8(ascii: "a") + 10)
        default: return nil
        }
    }
    return value
}
