import ConvexValues

/// A server → client sync-protocol message (reference §4.4). The server encodes these with ``jsonText``;
/// a client decodes them with ``init(json:)``.
public enum ServerMessage: Sendable, Hashable {
    case transition(Transition)
    /// Recognised when decoding; a deployment only sends it to new npm clients, and this project never sends it.
    case transitionChunk(TransitionChunk)
    case mutationResponse(MutationResponse)
    case actionResponse(ActionResponse)
    case authError(AuthError)
    /// `FatalError` with its `error` text; the server closes the socket after it.
    case fatalError(String)
    /// Application-level keepalive.
    case ping

    /// `Transition`: moves the client's view from `startVersion` to `endVersion`.
    public struct Transition: Sendable, Hashable {
        public var startVersion: StateVersion
        public var endVersion: StateVersion
        public var modifications: [StateModification]
        /// Server clock minus client clock, milliseconds.
        public var clientClockSkew: Double?
        /// Server clock when sent, nanoseconds since the epoch.
        public var serverTs: Int64?

        public init(
            startVersion: StateVersion, endVersion: StateVersion, modifications: [StateModification],
            clientClockSkew: Double? = nil, serverTs: Int64? = nil
        ) {
            self.startVersion = startVersion
            self.endVersion = endVersion
            self.modifications = modifications
            self.clientClockSkew = clientClockSkew
            self.serverTs = serverTs
        }
    }

    /// One change inside a Transition.
    public enum StateModification: Sendable, Hashable {
        case queryUpdated(queryId: UInt32, value: ConvexValue, logLines: [String], journal: String?)
        /// `errorData` present means an application (`ConvexError`) failure; an explicit `null` counts as present.
        case queryFailed(
            queryId: UInt32, errorMessage: String, logLines: [String], journal: String?, errorData: ConvexValue?)
        case queryRemoved(queryId: UInt32)

        public var queryId: UInt32 {
            switch self {
            case .queryUpdated(let id, _, _, _), .queryFailed(let id, _, _, _, _), .queryRemoved(let id): id
            }
        }
    }

    /// `TransitionChunk`: one piece of a split Transition.
    public struct TransitionChunk: Sendable, Hashable {
        public var chunk: String
        public var partNumber: UInt32
        public var totalParts: UInt32
        public var transitionId: String

        public init(chunk: String, partNumber: UInt32, totalParts: UInt32, transitionId: String) {
            self.chunk = chunk
            self.partNumber = partNumber
            self.totalParts = totalParts
            self.transitionId = transitionId
        }
    }

    /// The outcome of a mutation or action.
    public enum FunctionResult: Sendable, Hashable {
        case success(ConvexValue)
        /// `message` is sent in the `result` field; `errorData` is present for a `ConvexError`.
        case failure(message: String, errorData: ConvexValue?)
    }

    /// `MutationResponse`; `ts` is the commit timestamp of a successful mutation, `nil` on failure.
    public struct MutationResponse: Sendable, Hashable {
        public var requestId: UInt32
        public var result: FunctionResult
        public var ts: ConvexTimestamp?
        public var logLines: [String]

        public init(requestId: UInt32, result: FunctionResult, ts: ConvexTimestamp?, logLines: [String] = []) {
            self.requestId = requestId
            self.result = result
            self.ts = ts
            self.logLines = logLines
        }
    }

    /// `ActionResponse`.
    public struct ActionResponse: Sendable, Hashable {
        public var requestId: UInt32
        public var result: FunctionResult
        public var logLines: [String]

        public init(requestId: UInt32, result: FunctionResult, logLines: [String] = []) {
            self.requestId = requestId
            self.result = result
            self.logLines = logLines
        }
    }

    /// `AuthError`: `authUpdateAttempted` true when a new Authenticate was rejected.
    public struct AuthError: Sendable, Hashable {
        public var error: String
        public var baseVersion: UInt32?
        public var authUpdateAttempted: Bool?

        public init(error: String, baseVersion: UInt32?, authUpdateAttempted: Bool?) {
            self.error = error
            self.baseVersion = baseVersion
            self.authUpdateAttempted = authUpdateAttempted
        }
    }

    /// The message's `type` string.
    public var typeName: String {
        switch self {
        case .transition: "Transition"
        case .transitionChunk: "TransitionChunk"
        case .mutationResponse: "MutationResponse"
        case .actionResponse: "ActionResponse"
        case .authError: "AuthError"
        case .fatalError: "FatalError"
        case .ping: "Ping"
        }
    }

    /// All message types, as the `type` field spells them.
    public static let typeNames = [
        "Transition", "MutationResponse", "ActionResponse", "FatalError", "AuthError", "TransitionChunk", "Ping",
    ]
}

extension ServerMessage {
    /// Decodes one frame.
    /// - Throws: `SyncProtocolError` naming the problem (unknown `type`, missing `logLines`, bad timestamp,
    ///   invalid Convex JSON in a value, …).
    public init(json bytes: some Collection<UInt8>) throws(SyncProtocolError) {
        let r = try EnvelopeReader.parse(bytes)
        let type = try r.string("type")
        switch type {
        case "Transition":
            var modifications: [StateModification] = []
            for (i, item) in try r.array("modifications").enumerated() {
                let m = try EnvelopeReader(item, prefix: "modifications[\(i)]")
                let mType = try m.string("type")
                switch mType {
                case "QueryUpdated":
                    modifications.append(
                        .queryUpdated(
                            queryId: try m.u32("queryId"), value: try m.checkedValue("value"),
                            logLines: try m.stringArray("logLines"), journal: try m.optionalString("journal")))
                case "QueryFailed":
                    var errorData: ConvexValue? = nil
                    if m.has("errorData") { errorData = try m.checkedValue("errorData") }
                    modifications.append(
                        .queryFailed(
                            queryId: try m.u32("queryId"), errorMessage: try m.string("errorMessage"),
                            logLines: try m.stringArray("logLines"), journal: try m.optionalString("journal"),
                            errorData: errorData))
                case "QueryRemoved":
                    modifications.append(.queryRemoved(queryId: try m.u32("queryId")))
                default:
                    throw SyncProtocolError(
                        .unknownType, field: m.name("type"),
                        message:
                            "unknown variant `\(mType)`, expected one of `QueryUpdated`, `QueryFailed`, `QueryRemoved`")
                }
            }
            var serverTs: Int64? = nil
            if let d = try r.optionalNumber("serverTs") {
                guard let v = Int64(exactly: d.rounded()) else {
                    throw .invalid("serverTs", "an integer number of nanoseconds")
                }
                serverTs = v
            }
            self = .transition(
                Transition(
                    startVersion: try StateVersion(reading: try r.object("startVersion")),
                    endVersion: try StateVersion(reading: try r.object("endVersion")),
                    modifications: modifications,
                    clientClockSkew: try r.optionalNumber("clientClockSkew"),
                    serverTs: serverTs))
        case "TransitionChunk":
            self = .transitionChunk(
                TransitionChunk(
                    chunk: try r.string("chunk"), partNumber: try r.u32("partNumber"),
                    totalParts: try r.u32("totalParts"),
                    transitionId: try r.string("transitionId")))
        case "MutationResponse":
            self = .mutationResponse(
                MutationResponse(
                    requestId: try r.u32("requestId"), result: try Self.functionResult(r),
                    ts: try r.optionalTimestamp("ts"), logLines: try r.stringArray("logLines")))
        case "ActionResponse":
            self = .actionResponse(
                ActionResponse(
                    requestId: try r.u32("requestId"), result: try Self.functionResult(r),
                    logLines: try r.stringArray("logLines")))
        case "AuthError":
            self = .authError(
                AuthError(
                    error: try r.string("error"), baseVersion: try r.optionalU32("baseVersion"),
                    authUpdateAttempted: try r.optionalBool("authUpdateAttempted")))
        case "FatalError":
            self = .fatalError(try r.string("error"))
        case "Ping":
            self = .ping
        default:
            throw SyncProtocolError(
                .unknownType, field: "type",
                message: "unknown variant `\(type)`, expected one of "
                    + ServerMessage.typeNames.map { "`\($0)`" }.joined(separator: ", "))
        }
    }

    /// Decodes one frame of text.
    public init(json text: String) throws(SyncProtocolError) {
        try self.init(json: Array(text.utf8))
    }

    private static func functionResult(_ r: EnvelopeReader) throws(SyncProtocolError) -> FunctionResult {
        if try r.bool("success") {
            return .success(try r.checkedValue("result"))
        }
        guard case .string(let message) = try r.value("result") else {
            throw .invalid("result", "an error message string when success is false")
        }
        var errorData: ConvexValue? = nil
        if r.has("errorData") { errorData = try r.checkedValue("errorData") }
        return .failure(message: message, errorData: errorData)
    }

    private static func writeResult(_ result: FunctionResult, into w: inout EnvelopeWriter) {
        switch result {
        case .success(let value):
            w.bool("success", true)
            w.value("result", value)
        case .failure(let message, _):
            w.bool("success", false)
            w.string("result", message)
        }
    }

    /// The frame's JSON bytes, in the shape the real server emits (e.g. `logLines` always present,
    /// `clientClockSkew`/`serverTs` keys always present on Transitions).
    public var json: [UInt8] {
        var w = EnvelopeWriter()
        w.string("type", typeName)
        switch self {
        case .transition(let t):
            w.rawBytes("startVersion", t.startVersion.json)
            w.rawBytes("endVersion", t.endVersion.json)
            w.array(
                "modifications",
                t.modifications.map { mod in
                    var mw = EnvelopeWriter()
                    switch mod {
                    case .queryUpdated(let queryId, let value, let logLines, let journal):
                        mw.string("type", "QueryUpdated")
                        mw.u32("queryId", queryId)
                        mw.value("value", value)
                        mw.stringArray("logLines", logLines)
                        mw.optionalString("journal", journal)
                    case .queryFailed(let queryId, let errorMessage, let logLines, let journal, let errorData):
                        mw.string("type", "QueryFailed")
                        mw.u32("queryId", queryId)
                        mw.string("errorMessage", errorMessage)
                        mw.stringArray("logLines", logLines)
                        mw.optionalString("journal", journal)
                        if let errorData { mw.value("errorData", errorData) }
                    case .queryRemoved(let queryId):
                        mw.string("type", "QueryRemoved")
                        mw.u32("queryId", queryId)
                    }
                    return mw.finish()
                })
            if let skew = t.clientClockSkew {
                w.number("clientClockSkew", skew)
            } else {
                w.raw("clientClockSkew", "null")
            }
            if let serverTs = t.serverTs { w.raw("serverTs", String(serverTs)) } else { w.raw("serverTs", "null") }
        case .transitionChunk(let c):
            w.string("chunk", c.chunk)
            w.u32("partNumber", c.partNumber)
            w.u32("totalParts", c.totalParts)
            w.string("transitionId", c.transitionId)
        case .mutationResponse(let m):
            w.u32("requestId", m.requestId)
            Self.writeResult(m.result, into: &w)
            if let ts = m.ts { w.string("ts", ts.base64) } else { w.raw("ts", "null") }
            w.stringArray("logLines", m.logLines)
            if case .failure(_, let errorData?) = m.result { w.value("errorData", errorData) }
        case .actionResponse(let a):
            w.u32("requestId", a.requestId)
            Self.writeResult(a.result, into: &w)
            w.stringArray("logLines", a.logLines)
            if case .failure(_, let errorData?) = a.result { w.value("errorData", errorData) }
        case .authError(let e):
            w.string("error", e.error)
            if let v = e.baseVersion { w.u32("baseVersion", v) } else { w.raw("baseVersion", "null") }
            if let attempted = e.authUpdateAttempted { w.bool("authUpdateAttempted", attempted) }
        case .fatalError(let error):
            w.string("error", error)
        case .ping:
            break
        }
        return w.finish()
    }

    /// The frame's JSON text, ready for a WebSocket text frame.
    public var jsonText: String { String(decoding: json, as: UTF8.self) }
}
