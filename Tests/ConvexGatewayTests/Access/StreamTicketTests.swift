import Convex
import ConvexValues
import Foundation
import Testing

@testable import ConvexGateway

/// Sealing and opening stream tickets, with time passed in (Unix milliseconds), never slept through.
@Suite struct StreamTicketTests {
    static let now: Int64 = 1_800_000_000_000
    static let material = Array("0123456789abcdef0123456789abcdef-test-material".utf8)

    static func tickets(material: [UInt8] = material, maxLifetime: Duration = .seconds(3600)) throws -> StreamTickets {
        StreamTickets(key: try StreamTicketKey(material: material, source: "test"), maxLifetime: maxLifetime)
    }

    /// An unsigned JWT whose payload holds `claims` (JSON object text).
    static func jwt(_ claims: String) -> String {
        Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array(claims.utf8)) + ".sig"
    }

    static func jwt(expiresAtSeconds exp: Int64) -> String {
        jwt(#"{"sub":"ada","exp":\#(exp)}"#)
    }

    /// Writes `contents` to a new temporary file; the caller removes it.
    static func temporaryFile(_ contents: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ticket-key-\(UUID().uuidString)")
        try Data(contents.utf8).write(to: file)
        return file
    }

    static func refusal<T>(_ body: () throws -> T) -> GatewayError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? GatewayError
        }
    }

    @Test func aTicketOpensToItsTokenUntilTheTokenExpires() throws {
        let tickets = try Self.tickets()
        let token = Self.jwt(expiresAtSeconds: Self.now / 1000 + 600)
        let issued = try tickets.issue(for: token, now: Self.now)
        #expect(issued.expiresAt == Self.now + 600_000, "the token's own exp comes before the cap")
        #expect(try tickets.open(issued.ticket, now: Self.now) == token)
        #expect(try tickets.open(issued.ticket, now: issued.expiresAt - 1) == token)
        let expired = Self.refusal { try tickets.open(issued.ticket, now: issued.expiresAt) }
        #expect(expired?.status == 401)
        #expect(expired?.code == .unauthenticated)
        #expect(expired?.message.contains("expired") == true, "\(String(describing: expired))")
    }

    @Test func theTicketIsURLSafeAndRevealsNothingOfTheToken() throws {
        let tickets = try Self.tickets()
        let token = Self.jwt(#"{"sub":"visible-subject-name","exp":1900000000}"#)
        let ticket = try tickets.issue(for: token, now: Self.now).ticket
        #expect(
            ticket.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            })
        let bytes = try #require(Base64URL.decode(ticket))
        #expect(bytes.first == StreamTickets.version)
        // Every part of the token long enough that random base64url would not hold it by chance (the 3-letter
        // signature would, now and then).
        for part in token.split(separator: ".") where part.count >= 16 {
            #expect(!ticket.contains(part))
        }
        #expect(!String(decoding: bytes, as: UTF8.self).contains("visible-subject-name"))
        // Two tickets for one token differ (a fresh nonce each time).
        #expect(try tickets.issue(for: token, now: Self.now).ticket != ticket)
    }

    @Test func changingAnyByteOrCharacterIsRefused() throws {
        let tickets = try Self.tickets()
        let ticket = try tickets.issue(for: Self.jwt(expiresAtSeconds: 1_900_000_000), now: Self.now).ticket
        let bytes = try #require(Base64URL.decode(ticket))
        for index in bytes.indices {
            var changed = bytes
            changed[index] ^= 0x01
            let refused = Self.refusal { try tickets.open(Base64URL.encode(changed), now: Self.now) }
            #expect(refused?.status == 401, "byte \(index)")
        }
        let characters = Array(ticket)
        for index in characters.indices {
            var changed = characters
            changed[index] = changed[index] == "A" ? "B" : "A"
            let refused = Self.refusal { try tickets.open(String(changed), now: Self.now) }
            #expect(refused?.status == 401, "character \(index)")
        }
        for cut in [ticket.dropLast(), ticket.dropFirst(), ticket + "A", ticket + "="] as [Substring] {
            #expect(Self.refusal { try tickets.open(String(cut), now: Self.now) }?.status == 401)
        }
    }

    @Test func aTicketSealedUnderAnotherKeyIsRefused() throws {
        let ours = try Self.tickets()
        let theirs = try Self.tickets(material: Array("another-secret-material-of-32-bytes-or-more".utf8))
        let ticket = try theirs.issue(for: Self.jwt(expiresAtSeconds: 1_900_000_000), now: Self.now).ticket
        let refused = Self.refusal { try ours.open(ticket, now: Self.now) }
        #expect(refused?.status == 401)
        #expect(refused?.message.contains("another ticket key") == true, "\(String(describing: refused))")
        // The same material gives the same key: another replica opens it.
        let replica = try Self.tickets(material: Array("another-secret-material-of-32-bytes-or-more".utf8))
        #expect(throws: Never.self) { try replica.open(ticket, now: Self.now) }
        // A random key opens nothing another key sealed.
        let random = StreamTickets(key: .random(), maxLifetime: .seconds(60))
        #expect(Self.refusal { try random.open(ticket, now: Self.now) }?.status == 401)
    }

    @Test func theMaximumLifetimeCapsLongTokensAndTokensWithoutExp() throws {
        let tickets = try Self.tickets(maxLifetime: .seconds(90))
        let long = try tickets.issue(for: Self.jwt(expiresAtSeconds: Self.now / 1000 + 86_400), now: Self.now)
        #expect(long.expiresAt == Self.now + 90_000)
        let noExp = try tickets.issue(for: Self.jwt(#"{"sub":"ada"}"#), now: Self.now)
        #expect(noExp.expiresAt == Self.now + 90_000)
        #expect(Self.refusal { try tickets.open(noExp.ticket, now: Self.now + 90_000) }?.status == 401)
        #expect(throws: Never.self) { try tickets.open(noExp.ticket, now: Self.now + 89_999) }
    }

    @Test(arguments: [
        ("not-a-jwt", "JWT"),
        ("a.b", "JWT"),
        ("e30.bm90IGpzb24.sig", "JWT"),
        (StreamTicketTests.jwt(#"{"exp":"soon"}"#), "'exp'"),
        (StreamTicketTests.jwt(expiresAtSeconds: StreamTicketTests.now / 1000 - 1), "expired"),
    ])
    func noTicketForATokenThatCannotMakeOne(token: String, mention: String) throws {
        let refused = Self.refusal { try Self.tickets().issue(for: token, now: Self.now) }
        #expect(refused?.status == 401)
        #expect(refused?.code == .unauthenticated)
        #expect(refused?.message.contains(mention) == true, "\(String(describing: refused))")
    }

    @Test(arguments: [
        "", "!!!", "AQ", "AA", String(repeating: "A", count: 64), "Ag" + String(repeating: "A", count: 80),
    ])
    func malformedTicketsAreRefused(ticket: String) throws {
        let refused = Self.refusal { try Self.tickets().open(ticket, now: Self.now) }
        #expect(refused?.status == 401)
        #expect(refused?.code == .unauthenticated)
    }

    @Test func aKeyNeedsThirtyTwoBytesOfMaterial() throws {
        #expect(throws: SecretError.self) { try StreamTicketKey(material: Array(repeating: 1, count: 31), source: "x") }
        #expect(throws: Never.self) { try StreamTicketKey(material: Array(repeating: 1, count: 32), source: "x") }
        #expect("\(try StreamTicketKey(material: Self.material, source: "x"))" == "<redacted>")
    }

    @Test func aKeyFileIsTrimmedAndMustHoldThirtyTwoBytes() throws {
        let short = try Self.temporaryFile("  " + String(repeating: "k", count: 31) + "\n\n")
        let good = try Self.temporaryFile(String(repeating: "k", count: 32) + "\n")
        defer { for file in [short, good] { try? FileManager.default.removeItem(at: file) } }
        do {
            _ = try StreamTicketKey.load(file: short.path, name: "--ticket-key-file/GATEWAY_TICKET_KEY_FILE")
            Issue.record("a 31-byte key file was accepted")
        } catch {
            #expect(error.message.contains("--ticket-key-file/GATEWAY_TICKET_KEY_FILE"))
            #expect(error.message.contains("31 bytes"), "\(error)")
            #expect(!error.message.contains("kkkk"))
        }
        let fromFile = StreamTickets(
            key: try StreamTicketKey.load(file: good.path, name: "t"), maxLifetime: .seconds(60))
        let direct = try Self.tickets(material: Array(String(repeating: "k", count: 32).utf8))
        let ticket = try direct.issue(for: Self.jwt(expiresAtSeconds: 1_900_000_000), now: Self.now).ticket
        #expect(throws: Never.self) { try fromFile.open(ticket, now: Self.now) }
        #expect(throws: SecretError.self) { try StreamTicketKey.load(file: "/nonexistent/ticket.key", name: "t") }
    }
}
