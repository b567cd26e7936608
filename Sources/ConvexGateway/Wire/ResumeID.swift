/// The `id:` of a stream's events, which a reconnecting `EventSource` sends back as `Last-Event-ID`: what the client
/// then holds of every subscription, so that after a reconnect only the subscriptions whose result changed meanwhile
/// are sent again. The gateway keeps no state between connections, so any replica can resume any stream.
///
/// Format: `<version>-<hash>[.<hash>…]`, one hash per subscription in the order of the stream URL: the lowercase hex
/// of the 64-bit hash of the result the client holds (empty when it holds none). `version` grows with every change
/// (it follows the wall clock in milliseconds). A `/subscribe/<function>` stream's id is `<version>-<hash>`.
struct ResumeID: Equatable, Sendable {
    var version: ResultVersion
    /// Per subscription, the hash of the result the client holds, `nil` for none.
    var held: [ContentHash?]

    init(version: ResultVersion, held: [ContentHash?]) {
        self.version = version
        self.held = held
    }

    /// Reads a `Last-Event-ID` of a stream of `count` subscriptions; `nil` when it is not one (another stream's id, a
    /// different number of subscriptions, or garbage), and then every subscription is sent.
    init?(parsing text: String, count: Int) {
        guard count > 0, let dash = text.firstIndex(of: "-"), let version = UInt64(text[..<dash]) else { return nil }
        let hashes = text[text.index(after: dash)...].split(separator: ".", omittingEmptySubsequences: false)
        guard hashes.count == count else { return nil }
        var held: [ContentHash?] = []
        held.reserveCapacity(count)
        for hash in hashes {
            if hash.isEmpty {
                held.append(nil)
            } else {
                guard let value = ContentHash(parsing: hash) else { return nil }
                held.append(value)
            }
        }
        self.version = ResultVersion(value: version)
        self.held = held
    }

    var text: String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``text``'s bytes (digits, `-`, lowercase hex and `.`: nothing an event's `id:` line must escape).
    func append(to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + 21 + held.count * 17)
        bytes.appendDecimal(version.value)
        bytes.append(UInt8(ascii: "-"))
        for (index, hash) in held.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ".")) }
            hash?.append(to: &bytes)
        }
    }
}
