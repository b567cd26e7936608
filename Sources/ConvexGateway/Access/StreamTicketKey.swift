import Crypto
import Foundation

/// The key stream tickets are sealed with (``StreamTickets``). Replicas that derive it from the same secret accept
/// each other's tickets, so no replica keeps a table of tickets. Its `description` is a fixed placeholder, so it
/// never reaches a log.
public struct StreamTicketKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    let key: SymmetricKey

    /// Secret material shorter than this is refused: it could be guessed.
    public static let minimumMaterialBytes = 32

    /// Domain separation for the derivation: a secret shared with another purpose still gives a key of its own.
    private static let derivationInfo = Array("convex-gateway stream ticket key v1".utf8)

    /// Derives the 256-bit key from secret material with HKDF-SHA256.
    /// - Throws: ``SecretError`` naming `source` when the material is shorter than ``minimumMaterialBytes``.
    public init(material: some Collection<UInt8>, source: String) throws(SecretError) {
        guard material.count >= Self.minimumMaterialBytes else {
            throw SecretError(
                "\(source) holds \(material.count) bytes; a ticket key needs at least \(Self.minimumMaterialBytes) "
                    + "(for example: head -c 48 /dev/urandom | base64 > ticket.key)")
        }
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Array(material)), info: Self.derivationInfo, outputByteCount: 32)
    }

    private init(key: SymmetricKey) {
        self.key = key
    }

    /// A fresh random key: tickets then open only on this process.
    public static func random() -> StreamTicketKey {
        StreamTicketKey(key: SymmetricKey(size: .bits256))
    }

    /// Reads the key's secret material from a file: its contents without surrounding whitespace (such as a trailing
    /// newline), which must be at least ``minimumMaterialBytes`` long.
    /// - Parameter name: The setting to name in errors, e.g. `--ticket-key-file/GATEWAY_TICKET_KEY_FILE`.
    /// - Throws: ``SecretError`` naming the setting and the path (never the contents).
    public static func load(file path: String, name: String) throws(SecretError) -> StreamTicketKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SecretError("\(name): cannot read '\(path)'")
        }
        guard data.count <= 64 * 1024 else { throw SecretError("\(name): '\(path)' is larger than 64 KiB") }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        var material = Array(data)[...]
        while let first = material.first, isSpace(first) { material.removeFirst() }
        while let last = material.last, isSpace(last) { material.removeLast() }
        return try StreamTicketKey(material: material, source: "\(name) ('\(path)')")
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}
