import ConvexValues

/// A client → server sync-protocol message (reference §4.3): one JSON object per WebSocket text frame,
/// discriminated by `"type"`. The server decodes these with ``init(json:)``; a client encodes them with ``jsonText``.
public enum ClientMessage: Sendable, Hashable {
    case connect(Connect)
    case modifyQuerySet(ModifyQuerySet)
    case mutation(FunctionRequest)
    case action(FunctionRequest)
    case authenticate(Authenticate)
    case event(Event)

    /// `Connect`: the first message on every socket.
    public struct Connect: Sendable, Hashable {
        /// Hyphenated UUID; the Rust client picks a new one per connection, the JS client one per lifetime.
        public var sessionId: String
        public var connectionCount: UInt32
        /// `"InitialConnect"` on the first connect; the server treats an absent value as `"unknown"`.
        public var lastCloseReason: String?
        public var maxObservedTimestamp: ConvexTimestamp?
        /// Client clock in milliseconds (the Rust client sends 0).
        public var clientTs: Double?

        public init(
            sessionId: String, connectionCount: UInt32, lastCloseReason: String?,
            maxObservedTimestamp: ConvexTimestamp? = nil, clientTs: Double? = nil
        ) {
            self.sessionId = sessionId
            self.connectionCount = connectionCount
            self.lastCloseReason = lastCloseReason
            self.maxObservedTimestamp = maxObservedTimestamp
            self.clientTs = clientTs
        }
    }

    /// `ModifyQuerySet`: moves the socket's query set from `baseVersion` to `newVersion`.
    public struct ModifyQuerySet: Sendable, Hashable {
        public var baseVersion: UInt32
        public var newVersion: UInt32
        public var modifications: [QuerySetModification]

        public init(baseVersion: UInt32, newVersion: UInt32, modifications: [QuerySetModification]) {
            self.baseVersion = baseVersion
            self.newVersion = newVersion
            self.modifications = modifications
        }
    }

    /// One change of a query set.
    public enum QuerySetModification: Sendable, Hashable {
        case add(Add)
        case remove(queryId: UInt32)

        public struct Add: Sendable, Hashable {
            public var queryId: UInt32
            /// As the client wrote it; compare paths with ``UdfPath``.
            public var udfPath: String
            /// The named arguments (sent as a one-element array).
            public var args: [String: ConvexValue]
            /// Opaque pagination journal: the one of the query's latest result, sent back when re-adding it after a reconnect.
            public var journal: String?
            /// Admin-only component path.
            public var componentPath: String?

            public init(
                queryId: UInt32, udfPath: String, args: [String: ConvexValue] = [:],
                journal: String? = nil, componentPath: String? = nil
            ) {
                self.queryId = queryId
                self.udfPath = udfPath
                self.args = args
                self.journal = journal
                self.componentPath = componentPath
            }
        }
    }

    /// `Mutation` or `Action`.
    public struct FunctionRequest: Sendable, Hashable {
        /// Per-client counter shared by mutations and actions.
        public var requestId: UInt32
        public var udfPath: String
        public var args: [String: ConvexValue]
        public var componentPath: String?

        public init(requestId: UInt32, udfPath: String, args: [String: ConvexValue] = [:], componentPath: String? = nil)
        {
            self.requestId = requestId
            self.udfPath = udfPath
            self.args = args
            self.componentPath = componentPath
        }
    }

    /// `Authenticate`: replaces the socket's identity and bumps its identity version.
    public struct Authenticate: Sendable, Hashable {
        public var baseVersion: UInt32
        public var token: AuthenticationToken

        public init(baseVersion: UInt32, token: AuthenticationToken) {
            self.baseVersion = baseVersion
            self.token = token
        }
    }

    /// `Event`: client telemetry, which a server may ignore.
    public struct Event: Sendable, Hashable {
        public var eventType: String
        public var event: ConvexValue

        public init(eventType: String, event: ConvexValue) {
            self.eventType = eventType
            self.event = event
        }
    }

    /// The message's `type` string.
    public var typeName: String {
        switch self {
        case .connect: "Connect"
        case .modifyQuerySet: "ModifyQuerySet"
        case .mutation: "Mutation"
        case .action: "Action"
        case .authenticate: "Authenticate"
        case .event: "Event"
        }
    }
}

/// The credential an `Authenticate` message carries.
public enum AuthenticationToken: Sendable, Hashable {
    /// `tokenType: "User"` with a JWT.
    case user(String)
    /// `tokenType: "Admin"` with an admin key, optionally acting as a user (`UserIdentityAttributes` object;
    /// JS sends it as `impersonating`, Rust as `acting_as`).
    case admin(String, actingAs: ConvexValue? = nil)
    /// `tokenType: "None"`: clears the identity.
    case none
}

extension ClientMessage {
    /// All message types, as the `type` field spells them.
    public static let typeNames = ["Connect", "ModifyQuerySet", "Mutation", "Action", "Authenticate", "Event"]

    /// Decodes one frame.
    /// - Throws: `SyncProtocolError` naming the problem: invalid JSON, unknown `type`, a missing or ill-typed
    ///   field, or an argument value over Convex's limits.
    public init(json bytes: some Collection<UInt8>) throws(SyncProtocolError) {
        let r = try EnvelopeReader.parse(bytes)
        let type = try r.string("type")
        switch type {
        case "Connect":
            self = .connect(
                Connect(
                    sessionId: try r.string("sessionId"),
                    connectionCount: try r.u32("connectionCount"),
                    lastCloseReason: try r.optionalString("lastCloseReason"),
                    maxObservedTimestamp: try r.optionalTimestamp("maxObservedTimestamp"),
                    clientTs: try r.optionalNumber("clientTs")))
        case "ModifyQuerySet":
            var modifications: [QuerySetModification] = []
            for (i, item) in try r.array("modifications").enumerated() {
                let m = try EnvelopeReader(item, prefix: "modifications[\(i)]")
                let mType = try m.string("type")
                switch mType {
                case "Add":
                    modifications.append(
                        .add(
                            QuerySetModification.Add(
                                queryId: try m.u32("queryId"), udfPath: try m.string("udfPath"),
                                args: try m.args("args"),
                                journal: try m.optionalString("journal"),
                                componentPath: try m.optionalString("componentPath"))))
                case "Remove":
                    modifications.append(.remove(queryId: try m.u32("queryId")))
                default:
                    throw SyncProtocolError(
                        .unknownType, field: m.name("type"),
                        message: "unknown variant `\(mType)`, expected `Add` or `Remove`")
                }
            }
            self = .modifyQuerySet(
                ModifyQuerySet(
                    baseVersion: try r.u32("baseVersion"), newVersion: try r.u32("newVersion"),
                    modifications: modifications))
        case "Mutation", "Action":
            let request = FunctionRequest(
                requestId: try r.u32("requestId"), udfPath: try r.string("udfPath"), args: try r.args("args"),
                componentPath: try r.optionalString("componentPath"))
            self = type == "Mutation" ? .mutation(request) : .action(request)
        case "Authenticate":
            let baseVersion = try r.u32("baseVersion")
            let tokenType = try r.string("tokenType")
            let token: AuthenticationToken
            switch tokenType {
            case "User":
                token = .user(try r.string("value"))
            case "Admin":
                var actingAs: ConvexValue? = nil
                for key in ["impersonating", "acting_as", "actingAs"] where r.hasValue(key) {
                    let v = try r.checkedValue(key)
                    guard case .object = v else { throw .invalid(key, "an object of user identity attributes") }
                    actingAs = v
                }
                token = .admin(try r.string("value"), actingAs: actingAs)
            case "None":
                token = .none
            default:
                throw SyncProtocolError(
                    .unknownType, field: "tokenType",
                    message: "unknown variant `\(tokenType)`, expected one of `User`, `Admin`, `None`")
            }
            self = .authenticate(Authenticate(baseVersion: baseVersion, token: token))
        case "Event":
            self = .event(Event(eventType: try r.string("eventType"), event: r.fields["event"] ?? .null))
        default:
            throw SyncProtocolError(
                .unknownType, field: "type",
                message: "unknown variant `\(type)`, expected one of "
                    + ClientMessage.typeNames.map { "`\($0)`" }.joined(separator: ", "))
        }
    }

    /// Decodes one frame of text.
    public init(json text: String) throws(SyncProtocolError) {
        try self.init(json: Array(text.utf8))
    }

    /// The frame's JSON bytes.
    public var json: [UInt8] {
        var w = EnvelopeWriter()
        w.string("type", typeName)
        switch self {
        case .connect(let c):
            w.string("sessionId", c.sessionId)
            w.u32("connectionCount", c.connectionCount)
            w.optionalString("lastCloseReason", c.lastCloseReason)
            if let ts = c.maxObservedTimestamp { w.string("maxObservedTimestamp", ts.base64) }
            if let clientTs = c.clientTs { w.number("clientTs", clientTs) }
        case .modifyQuerySet(let m):
            w.u32("baseVersion", m.baseVersion)
            w.u32("newVersion", m.newVersion)
            w.array(
                "modifications",
                m.modifications.map { mod in
                    var mw = EnvelopeWriter()
                    switch mod {
                    case .add(let add):
                        mw.string("type", "Add")
                        mw.u32("queryId", add.queryId)
                        mw.string("udfPath", add.udfPath)
                        mw.args("args", add.args)
                        if let journal = add.journal { mw.string("journal", journal) }
                        if let componentPath = add.componentPath { mw.string("componentPath", componentPath) }
                    case .remove(let queryId):
                        mw.string("type", "Remove")
                        mw.u32("queryId", queryId)
                    }
                    return mw.finish()
                })
        case .mutation(let request), .action(let request):
            w.u32("requestId", request.requestId)
            w.string("udfPath", request.udfPath)
            w.args("args", request.args)
            if let componentPath = request.componentPath { w.string("componentPath", componentPath) }
        case .authenticate(let a):
            w.u32("baseVersion", a.baseVersion)
            switch a.token {
            case .user(let jwt):
                w.string("tokenType", "User")
                w.string("value", jwt)
            case .admin(let key, let actingAs):
                w.string("tokenType", "Admin")
                w.string("value", key)
                if let actingAs { w.value("impersonating", actingAs) }
            case .none:
                w.string("tokenType", "None")
            }
        case .event(let e):
            w.string("eventType", e.eventType)
            w.value("event", e.event)
        }
        return w.finish()
    }

    /// The frame's JSON text, ready for a WebSocket text frame.
    public var jsonText: String { String(decoding: json, as: UTF8.self) }
}
