/// Why a sync-protocol frame could not be decoded. `code` is stable for programs, `message` is for people.
public struct SyncProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The frame is not JSON, or a value inside it is not valid Convex JSON.
        public static let invalidJSON = Code(rawValue: "InvalidJSON")
        /// The frame is JSON but not an object.
        public static let notAnObject = Code(rawValue: "NotAnObject")
        /// `type` names no message (or modification) this protocol knows.
        public static let unknownType = Code(rawValue: "UnknownType")
        /// A required field is absent.
        public static let missingField = Code(rawValue: "MissingField")
        /// A field has the wrong type or an out-of-range value.
        public static let invalidField = Code(rawValue: "InvalidField")
        /// A value carried by the message breaks Convex's value limits.
        public static let invalidValue = Code(rawValue: "InvalidValue")
    }

    public let code: Code
    /// The offending field, as a dotted path inside the message (e.g. `modifications[0].queryId`), if any.
    public let field: String?
    public let message: String

    public init(_ code: Code, field: String? = nil, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    public static func missing(_ field: String) -> SyncProtocolError {
        SyncProtocolError(.missingField, field: field, message: "missing field `\(field)`")
    }

    public static func invalid(_ field: String, _ expected: String) -> SyncProtocolError {
        SyncProtocolError(.invalidField, field: field, message: "invalid field `\(field)`: expected \(expected)")
    }

    public var description: String { message }
}
