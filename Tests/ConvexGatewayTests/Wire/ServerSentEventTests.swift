import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

@Suite struct ServerSentEventTests {
    @Test func dataLinesCannotBreakFraming() {
        let event = ServerSentEvent(event: "update\nevil", id: "7\r", data: Array("a\r\nb\rc\nd\u{0}data: x".utf8))
        #expect(
            String(decoding: event.encoded(), as: UTF8.self)
                == "event: updateevil\nid: 7\ndata: a\ndata: b\ndata: c\ndata: ddata: x\n\n")
        // One line, copied as it is; a NUL alone is still dropped.
        #expect(
            String(decoding: ServerSentEvent(data: Array(#"{"a":"b\nc"}"#.utf8)).encoded(), as: UTF8.self)
                == "data: {\"a\":\"b\\nc\"}\n\n")
        #expect(String(decoding: ServerSentEvent(data: [0x61, 0, 0x62]).encoded(), as: UTF8.self) == "data: ab\n\n")
    }

    @Test func comment() {
        #expect(String(decoding: ServerSentEvent.comment("hb"), as: UTF8.self) == ": hb\n\n")
    }
}
