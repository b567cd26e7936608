import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

@Suite struct GatewayErrorBodyTests {
    @Test func everyCodeHasOneStatusFromTheTable() {
        for code in GatewayError.Code.allCases {
            #expect((400...599).contains(code.status), "\(code)")
            #expect(GatewayError(code: code, message: "m").status == code.status)
        }
        #expect(GatewayError.Code.convexError.status == 422)
        #expect(GatewayError.Code.invalidTimestamp.status == 400)
        #expect(GatewayError.Code.upstreamTimeout.status == 504)
        #expect(Set(GatewayError.Code.allCases.map(\.rawValue)).count == GatewayError.Code.allCases.count)
    }

    @Test func oneBodyShape() {
        let error = GatewayError(
            code: .convexError, message: "Team full", data: .object(["max": .int64(3)]))
        let body = String(decoding: error.body { $0.convexJSON() }, as: UTF8.self)
        #expect(
            body
                == #"{"error":{"code":"ConvexError","message":"Team full","data":{"max":{"$integer":"AwAAAAAAAAA="}}}}"#
        )
        #expect(
            String(decoding: GatewayError.internalError.body { $0.convexJSON() }, as: UTF8.self)
                == #"{"error":{"code":"InternalError","message":"Internal gateway error"}}"#)
    }
}
