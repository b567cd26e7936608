import ConvexGateway
import Testing

/// `traceparent` as W3C Trace Context (level 1) reads it: what is kept, what is ignored, and the trace a request gets.
@Suite("Trace context")
struct TraceContextTests {
    static let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("a valid traceparent gives its trace id, parent id and flags, and is written back the same")
    func valid() throws {
        let parent = try #require(TraceParent(Self.valid))
        #expect(parent.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(parent.parentID.description == "00f067aa0ba902b7")
        #expect(parent.flags == 1)
        #expect(parent.header == Self.valid)
        #expect(TraceParent(" \(Self.valid)\t")?.header == Self.valid)
        #expect(TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.flags == 0)
        // A later version may add fields after the flags, behind a `-`.
        #expect(TraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds") != nil)
    }

    @Test(
        "a malformed traceparent is ignored",
        arguments: [
            "",
            "00",
            "garbage",
            // Version ff, and version 00 with more after the flags.
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            // All-zero ids.
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            // Upper case, short, long, not hex, wrong separators.
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47361-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ])
    func malformed(header: String) {
        #expect(TraceParent(header) == nil)
    }

    @Test("a request joins the caller's trace with a span of its own, else starts a new trace")
    func requestTrace() {
        let joined = RequestTrace(traceparent: Self.valid, tracestate: "vendor=value")
        #expect(joined.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(joined.parentID?.description == "00f067aa0ba902b7")
        #expect(joined.spanID.description != "00f067aa0ba902b7")
        #expect(joined.traceState == "vendor=value")
        #expect(joined.traceparent == "00-4bf92f3577b34da6a3ce929d0e0e4736-\(joined.spanID)-01")

        for header in [nil, "00-zz-bad-01"] {
            let started = RequestTrace(traceparent: header, tracestate: "vendor=value")
            #expect(started.parentID == nil)
            #expect(started.traceState == nil)
            #expect(started.traceID.description.wholeMatch(of: /[0-9a-f]{32}/) != nil)
            #expect(started.traceID.description != String(repeating: "0", count: 32))
            #expect(started.spanID.description.wholeMatch(of: /[0-9a-f]{16}/) != nil)
            #expect(TraceParent(started.traceparent)?.traceID == started.traceID)
        }
        // A tracestate with a control character, or too long, is not kept.
        #expect(RequestTrace(traceparent: Self.valid, tracestate: "a=b\n").traceState == nil)
        #expect(RequestTrace(traceparent: Self.valid, tracestate: String(repeating: "a", count: 513)).traceState == nil)
    }
}
