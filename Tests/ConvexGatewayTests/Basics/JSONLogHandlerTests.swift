import Foundation
import Logging
import Synchronization
import Testing

@testable import ConvexGateway

/// `--log-format json`: every event one JSON object on one line, with stable field names.
@Suite struct JSONLogHandlerTests {
    static func object(_ line: String) throws -> [String: Any] {
        #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil, "\(line)")
        let parsed = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(parsed as? [String: Any], "\(line)")
    }

    @Test func aLineHoldsTheFixedFieldsAndTheMetadataFlattened() throws {
        let line = JSONLogHandler.line(
            milliseconds: 1_796_668_200_123, level: .info, message: "Request answered", label: "convex-gateway",
            source: "ConvexGateway",
            metadata: [
                "http.status": "200", "nested": ["inner": "x", "deeper": ["most": "y"]], "list": ["a", "b"],
                "time": "not the time",
            ])
        let object = try Self.object(line)
        #expect(object["time"] as? String == "2026-12-07T18:30:00.123Z")
        #expect(object["level"] as? String == "info")
        #expect(object["message"] as? String == "Request answered")
        #expect(object["label"] as? String == "convex-gateway")
        #expect(object["source"] as? String == "ConvexGateway")
        #expect(object["http.status"] as? String == "200")
        #expect(object["nested.inner"] as? String == "x")
        #expect(object["nested.deeper.most"] as? String == "y")
        #expect(object["list"] as? [String] == ["a", "b"])
        #expect(object["metadata.time"] as? String == "not the time")
        #expect(line.hasPrefix(#"{"time":"#))
    }

    @Test(arguments: ["line\nbreak", "quote \" and \\ backslash", "tab\tand \u{1}\u{7f}\u{85}", "\u{2028}é😀", ""])
    func anyTextStaysOneParsableLine(text: String) throws {
        let line = JSONLogHandler.line(
            milliseconds: 0, level: .warning, message: text, label: text, source: "s", metadata: [text: "\(text)"])
        let object = try Self.object(line)
        #expect(object["message"] as? String == text)
        #expect(object["time"] as? String == "1970-01-01T00:00:00.000Z")
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"), (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (4_102_444_799_999, "2099-12-31T23:59:59.999Z"), (-1, "1969-12-31T23:59:59.999Z"),
    ])
    func timestamps(milliseconds: Int64, expected: String) {
        #expect(JSONLogHandler.timestamp(milliseconds) == expected)
    }

    @Test func theHandlerWritesItsMetadataAndTheEvent() throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "test") { label in
            JSONLogHandler(label: label, now: { 0 }, write: { line in lines.withLock { $0.append(line) } })
        }
        logger[metadataKey: "replica"] = "a"
        logger.info("hello", metadata: ["k": "v"])
        logger.debug("left out at info")
        let written = lines.withLock { $0 }
        #expect(written.count == 1)
        let object = try Self.object(try #require(written.first))
        #expect(object["replica"] as? String == "a")
        #expect(object["k"] as? String == "v")
        #expect(object["message"] as? String == "hello")
    }
}
