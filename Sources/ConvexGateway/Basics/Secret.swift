import Foundation

/// A credential (the gateway's API key, a deployment admin key) that never appears in logs or descriptions: its
/// `description` is a fixed placeholder, so interpolating a configuration into a log line cannot leak it.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret's bytes, for comparisons only.
    let bytes: [UInt8]

    /// Wraps a secret value. Surrounding whitespace (such as a file's trailing newline) is removed.
    /// - Throws: ``SecretError`` when nothing but whitespace is left.
    public init(_ value: String, source: String) throws(SecretError) {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw SecretError("\(source) is empty") }
        guard trimmed.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw SecretError("\(source) must be printable ASCII without spaces")
        }
        bytes = Array(trimmed.utf8)
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }

    /// The secret's text, for handing to a client library that needs it (never for logging).
    public var revealed: String { String(decoding: bytes, as: UTF8.self) }

    /// Compares `candidate` with the secret in time that depends only on the secret's length, so response timing
    /// does not reveal how many leading bytes of a guess were right.
    public func matches<Bytes: Collection<UInt8>>(_ candidate: Bytes) -> Bool {
        let given = Array(candidate)
        var difference = UInt(bitPattern: given.count ^ bytes.count)
        for index in bytes.indices {
            let byte = index < given.count ? given[index] : 0
            difference |= UInt(byte ^ bytes[index])
        }
        return difference == 0
    }

    /// Reads a secret given directly (an environment variable) or as a file path; at most one of them may be set.
    /// - Parameters:
    ///   - value: The secret itself, e.g. the value of `GATEWAY_API_KEY`.
    ///   - valueName: The name to mention in errors, e.g. `GATEWAY_API_KEY`.
    ///   - file: A path to a file holding the secret, e.g. from `--api-key-file`.
    ///   - fileName: The name to mention in errors, e.g. `--api-key-file/GATEWAY_API_KEY_FILE`.
    /// - Returns: `nil` when neither is set.
    /// - Throws: ``SecretError`` naming the setting (never the secret) when both are set, the file cannot be read,
    ///   or the secret is empty.
    public static func load(value: String?, valueName: String, file: String?, fileName: String) throws(SecretError)
        -> Secret?
    {
        switch (value, file) {
        case (nil, nil):
            return nil
        case (.some, .some):
            throw SecretError("Set either \(valueName) or \(fileName), not both")
        case (let value?, nil):
            return try Secret(value, source: valueName)
        case (nil, let path?):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw SecretError("\(fileName): cannot read '\(path)'")
            }
            guard data.count <= 64 * 1024, let text = String(data: data, encoding: .utf8) else {
                throw SecretError("\(fileName): '\(path)' is not a short UTF-8 text file")
            }
            return try Secret(text, source: "\(fileName) ('\(path)')")
        }
    }
}

/// Why a secret could not be loaded. The message names the setting and never holds the secret.
public struct SecretError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
