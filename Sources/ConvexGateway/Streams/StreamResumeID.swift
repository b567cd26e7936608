/// The `id:` of a multi-subscription stream's events, which a reconnecting `EventSource` sends back as
/// `Last-Event-ID`: what the client holds of every subscription, so that after a reconnect only the subscriptions
/// whose result changed meanwhile are sent again. The gateway keeps no state between connections, so any replica
/// can resume any stream.
///
/// Format: one 8-character token per subscription, in the order of the stream URL, no separators. A token is 48
/// bits of the result's hash in base64url (`A–Z a–z 0–9 - _`); `........` means the client has no result yet.
/// 100 subscriptions make an 800-character id.
struct StreamResumeID: Equatable, Sendable {
    /// Per subscription, the 48-bit hash of the result the client holds, `nil` for none.
    var held: [UInt64?]

    static let tokenLength = 8
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let none = UInt8(ascii: ".")

    init(held: [UInt64?]) { self.held = held }

    /// A stream of `count` subscriptions of which the client holds nothing.
    init(count: Int) { held = Array(repeating: nil, count: count) }

    /// The 48 bits of a result hash that the id carries.
    static func token(_ hash: UInt64) -> UInt64 { hash >> 16 }

    /// Reads a `Last-Event-ID` for a stream of `count` subscriptions; `nil` when it is not one (another stream's id,
    /// a different number of subscriptions, or garbage), and then every subscription is sent.
    init?(parsing text: String, count: Int) {
        let bytes = Array(text.utf8)
        guard count > 0, bytes.count == count * Self.tokenLength else { return nil }
        var held: [UInt64?] = []
        held.reserveCapacity(count)
        for start in stride(from: 0, to: bytes.count, by: Self.tokenLength) {
            let token = bytes[start..<start + Self.tokenLength]
            if token.allSatisfy({ $0 == Self.none }) {
                held.append(nil)
                continue
            }
            var value: UInt64 = 0
            for byte in token {
                guard let digit = Self.digit(byte) else { return nil }
                value = value << 6 | UInt64(digit)
            }
            held.append(value)
        }
        self.held = held
    }

    var text: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(held.count * Self.tokenLength)
        for value in held {
            guard let value else {
                bytes.append(contentsOf: repeatElement(Self.none, count: Self.tokenLength))
                continue
            }
            for shift in stride(from: 42, through: 0, by: -6) {
                bytes.append(Self.alphabet[Int(value >> UInt64(shift) & 0x3F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func digit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
