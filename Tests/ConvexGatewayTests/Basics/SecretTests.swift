import Clocks
import ConvexValues
import Foundation
import HTTPFields
import Testing

@testable import ConvexGateway

/// The access-control components on their own: no server, no clock, no I/O.
struct SecretTests {
    @Test func matchesOnlyTheExactKey() throws {
        let secret = try Secret("s3cr3t-key", source: "test")
        #expect(secret.matches(Array("s3cr3t-key".utf8)))
        #expect(!secret.matches(Array("s3cr3t-kex".utf8)))
        #expect(!secret.matches(Array("s3cr3t-ke".utf8)))
        #expect(!secret.matches(Array("s3cr3t-key2".utf8)))
        #expect(!secret.matches([UInt8]()))
        #expect(!secret.matches(Array("S3CR3T-KEY".utf8)))
    }

    @Test func neverPrintsItsValue() throws {
        let secret = try Secret("hunter2hunter2", source: "test")
        #expect(secret.description == "<redacted>")
        #expect("\(secret)" == "<redacted>")
        #expect(String(reflecting: secret) == "<redacted>")
        var configuration = AccessConfiguration()
        configuration.apiKey = secret
        #expect(!"\(configuration)".contains("hunter2"))
    }

    @Test func loadsFromTheEnvironmentOrAFile() throws {
        #expect(try Secret.load(value: nil, valueName: "A", file: nil, fileName: "B") == nil)
        let direct = try #require(try Secret.load(value: " key-1\n", valueName: "A", file: nil, fileName: "B"))
        #expect(direct.matches(Array("key-1".utf8)))

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)").path
        try "file-key-2\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = try #require(try Secret.load(value: nil, valueName: "A", file: path, fileName: "B"))
        #expect(fromFile.matches(Array("file-key-2".utf8)))
    }

    @Test func refusesAmbiguousEmptyOrUnreadableSecretsWithoutQuotingThem() {
        #expect(throws: SecretError.self) {
            try Secret.load(value: "x", valueName: "A", file: "/etc/hostname", fileName: "B")
        }
        #expect(throws: SecretError.self) { try Secret.load(value: "  \n", valueName: "A", file: nil, fileName: "B") }
        #expect(throws: SecretError.self) {
            try Secret.load(value: "two words", valueName: "A", file: nil, fileName: "B")
        }
        do throws(SecretError) {
            _ = try Secret.load(value: nil, valueName: "A", file: "/nonexistent/key", fileName: "GATEWAY_API_KEY_FILE")
            Issue.record("an unreadable file must fail")
        } catch {
            #expect(error.message.contains("GATEWAY_API_KEY_FILE"))
            #expect(error.message.contains("/nonexistent/key"))
        }
        do throws(SecretError) {
            _ = try Secret.load(value: "not printable\u{7}", valueName: "GATEWAY_API_KEY", file: nil, fileName: "B")
            Issue.record("a control character must fail")
        } catch {
            #expect(!error.message.contains("not printable"))
        }
    }
}
