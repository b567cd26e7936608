import HTTPFields
import Testing

@testable import ConvexGateway

/// Which `Host` values a gateway answers (DNS rebinding), read from the field's bytes.
@Suite struct HostCheckTests {
    static func refusal(_ check: HostCheck, _ host: String?) -> GatewayError.Code? {
        guard let host else { return check.refusal(nil)?.code }
        return FieldValue.of(host) { check.refusal($0)?.code }
    }

    @Test(arguments: [
        "127.0.0.1", "127.0.0.1:8080", "127.1.2.3:1", "localhost", "LOCALHOST:80", "LocalHost.", "app.localhost:3000",
        "[::1]", "[::1]:8080", "::1", " 127.0.0.1:8080 ",
    ])
    func loopbackNamesAreAnsweredOnALoopbackGateway(host: String) {
        let check = HostCheck(allowedHosts: [], listenHost: "127.0.0.1")
        #expect(Self.refusal(check, host) == nil)
    }

    @Test(arguments: [
        "evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "xlocalhost",
        "127.0.0.256", "127.1", "10.0.0.1", "[::2]", "127.0.0.1:80x", "", "[::1",
    ])
    func otherNamesAreRefusedOnALoopbackGateway(host: String) {
        let check = HostCheck(allowedHosts: [], listenHost: "::1")
        #expect(Self.refusal(check, host) == .hostNotAllowed)
    }

    @Test func theListAddsNamesAndAnyGatewayRefusesNoHost() {
        let listed = HostCheck(allowedHosts: ["Gateway.Internal"], listenHost: "127.0.0.1")
        #expect(Self.refusal(listed, "gateway.internal:443") == nil)
        #expect(Self.refusal(listed, "localhost") == nil)
        #expect(Self.refusal(listed, "other.internal") == .hostNotAllowed)
        #expect(Self.refusal(listed, nil) == .missingHost)
        let any = HostCheck(allowedHosts: [], listenHost: "0.0.0.0")
        #expect(Self.refusal(any, "evil.example") == nil)
        #expect(Self.refusal(any, nil) == .missingHost)
        let star = HostCheck(allowedHosts: ["*"], listenHost: "127.0.0.1")
        #expect(Self.refusal(star, "evil.example") == nil)
        let publicListed = HostCheck(allowedHosts: ["api.example.com"], listenHost: "0.0.0.0")
        #expect(Self.refusal(publicListed, "evil.example") == .hostNotAllowed)
    }
}
