import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

struct QueryStringTests {
    @Test(arguments: [
        ("a=1&b=%C3%A9", true), ("args=%7B%22a%22%3A1%7D", true), ("p=a+b", true), ("", true), ("a&&b=", true),
        ("a=%FF", false), ("%C0%AF=1", false), ("t=%E2%82", false), ("ok=1&bad=%ED%A0%80", false),
        ("x=%zz", false), ("y=%", false), ("z=%4", false),
    ])
    func acceptsOnlyUTF8(query: String, valid: Bool) {
        #expect(((try? QueryString(raw: query[...])) != nil) == valid, "\(query)")
    }

    @Test func decodesOnceWithPlusAsSpace() throws {
        let query = try QueryString(raw: "division=AL+Central&zip=02139&flag&e=%25%2B&=v")
        #expect(
            query.parameters == [
                .init(name: "division", value: "AL Central"), .init(name: "zip", value: "02139"),
                .init(name: "flag", value: nil), .init(name: "e", value: "%+"), .init(name: "", value: "v"),
            ])
    }

    @Test func namesTheParameter() throws {
        #expect {
            try QueryString(raw: "good=1&bad=%FF")
        } throws: { error in
            guard let error = error as? GatewayError else { return false }
            return error.status == 400 && error.code == .invalidArguments && error.message.contains("'bad'")
                && error.message.contains("UTF-8")
        }
        #expect {
            try QueryString(raw: "good=1&odd=%zz")
        } throws: { error in
            (error as? GatewayError)?.message.contains("'odd' has a malformed percent-escape") == true
        }
    }
}
