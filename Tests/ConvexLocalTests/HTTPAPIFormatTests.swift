import ConvexSyncProtocol
import ConvexValues
import Foundation
import Logging
import Testing

@testable import ConvexLocal

@Suite struct HTTPAPIFormatTests {
    let value: ConvexValue = [
        "i": .int64(-7), "b": .bytes(Data([0, 1, 0xFF])), "nan": .float64(.nan), "inf": .float64(-.infinity),
        "z": .float64(-0.0), "f": 2.0, "s": "x",
    ]

    @Test func renderings() {
        #expect(
            String(decoding: HTTPAPIFormat.json.render(value), as: UTF8.self)
                == #"{"b":"AAH/","f":2.0,"i":"-7","inf":"-Infinity","nan":"NaN","s":"x","z":-0.0}"#)
        #expect(
            String(decoding: HTTPAPIFormat.exportJSON.render(value), as: UTF8.self)
                == #"{"b":{"$bytes":"AAH/"},"f":2.0,"i":-7,"inf":{"$float":"AAAAAAAA8P8="},"nan":{"$float":"AAAAAAAA+H8="},"s":"x","z":-0.0}"#
        )
        #expect(HTTPAPIFormat.convexEncodedJSON.render(value) == value.convexJSON())
    }

    @Test(arguments: [
        (nil, HTTPAPIFormat.json), ("python-0.8.1", .json), ("python-0.5.0", .convexEncodedJSON),
        ("npm-1.4.1", .convexEncodedJSON),
        ("npm-1.4.2", .json), ("npm-cli-1.0.0", .json), ("rust-0.10.4", .json), ("weird", .json),
    ])
    func defaultFormats(header: String?, expected: HTTPAPIFormat) {
        #expect(HTTPAPIFormat.defaultFormat(convexClient: header) == expected)
    }
}
