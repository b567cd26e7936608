import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@Suite struct TimestampAndPathTests {
    @Test(arguments: [(UInt64(0), "AAAAAAAAAAA="), (1, "AQAAAAAAAAA="), (10, "CgAAAAAAAAA="), (1000, "6AMAAAAAAAA=")])
    func timestampWireForm(ns: UInt64, text: String) {
        #expect(ConvexTimestamp(nanoseconds: ns).base64 == text)
        #expect(ConvexTimestamp(base64: text) == ConvexTimestamp(nanoseconds: ns))
    }

    @Test func timestampRejectsBadText() {
        #expect(ConvexTimestamp(base64: "AQ==") == nil)
        #expect(ConvexTimestamp(base64: "//////////8=") == nil)  // > 2^63-1
        #expect(ConvexTimestamp(base64: "-_8=") == nil)
    }

    @Test(arguments: [
        ("messages:list", "messages:list"), ("messages.js:list", "messages:list"), ("messages", "messages:default"),
        ("messages.js", "messages:default"), ("messages:default", "messages:default"),
        ("dir/sub/m.js:f", "dir/sub/m:f"),
    ])
    func canonicalPaths(input: String, canonical: String) throws {
        #expect(try UdfPath(parsing: input).canonical == canonical)
    }

    @Test(arguments: ["m.ts:f", "", ":f", "m:", "dir/m.py", "/m:f", "a//b:f"])
    func invalidPaths(input: String) {
        #expect(throws: UdfPathError.self) { try UdfPath(parsing: input) }
    }

    /// A path written with a dot where the colon goes, as JavaScript names a function (`api.mlb.first_place_team`),
    /// is refused with the path as it should be written.
    @Test(arguments: [
        ("mlb.first_place_team", "; a function path is written module:function, such as 'mlb:first_place_team'"),
        ("dir/mlb.list", "; a function path is written module:function, such as 'dir/mlb:list'"),
        ("m.ts:f", ""),
    ])
    func aDotWhereTheColonGoesIsToldTheColon(input: String, hint: String) {
        #expect {
            try UdfPath(parsing: input)
        } throws: { error in
            guard let error = error as? UdfPathError else { return false }
            return error.message.hasSuffix("that isn't '.js'" + hint)
        }
    }

    @Test func rustCanonicalForm() throws {
        #expect(try UdfPath(parsing: "messages:list").rustCanonical == "messages.js:list")
    }
}
