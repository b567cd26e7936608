// The properties read the package's internal types through `@testable import`, which a release build (no testing
// enabled) cannot compile; there the target only says so (`swift build -c release` builds every target).
#if DEBUG
    import ConvexSyncProtocol
    import ConvexValues
    import FuzzSupport
    import HTTPFields

    @testable import ConvexGateway
    @testable import ConvexLocal

    /// What must hold for any request the gateway's parse and argument stages are given: the route and query string are
    /// parsed, the caller's credentials read, and the arguments typed (with the demo deployment's function spec, so
    /// validators are consulted), and each request ends as either typed arguments within Convex's limits or a
    /// `GatewayError` with a 4xx status; never a trap. The header-field readers (HTTPFields, the only unsafe code outside
    /// MicroHTTPD) give the same answer on a `String` and on its bytes.
    ///
    /// Input layout: a method line, a request-target line, header lines (`name: value`) up to an empty line, then the
    /// body; a missing part is empty.
    enum RequestProperties {
        static let spec: FunctionSpec = {
            let registry = FunctionRegistry()
            DemoFunctions.register(in: registry)
            guard let spec = try? FunctionSpec(specJSON: registry.functionSpec(url: nil)) else {
                fail("the demo functions' spec does not read")
            }
            return spec
        }()

        static let credentials: CallerCredentials = {
            guard let key = try? StreamTicketKey(material: Array(repeating: 7, count: 32), source: "fuzz") else {
                fail("the fuzz ticket key does not load")
            }
            return CallerCredentials(
                cookieName: "convex_token", tickets: StreamTickets(key: key, maxLifetime: .seconds(3600)),
                now: { 1_800_000_000_000 })
        }()

        static func check(_ bytes: [UInt8]) {
            let request = Self.request(from: bytes)
            checkHeaderFields(request)
            do throws(GatewayError) {
                let parsed = try ParsedRequest(request, defaultFormat: .plain, credentials: credentials)
                try checkArguments(parsed)
            } catch {
                require(
                    (400..<500).contains(error.code.status),
                    "\(request.method) \(request.target) gave \(error.code.status) \(error.code): \(error)")
            }
        }

        static func checkArguments(_ parsed: ParsedRequest) throws(GatewayError) {
            switch parsed.route.template {
            case "/subscribe", "/query":
                let kind: StreamSubscriptions.Kind = parsed.route.template == "/query" ? .batch : .stream
                let subscriptions = try StreamSubscriptions(parsed.query, limit: 16, kind: kind)
                for subscription in subscriptions.subscriptions {
                    checkTyped(try ArgumentStage.arguments(subscription.input, for: subscription.function, spec: spec))
                }
            default:
                guard let function = parsed.route.function else { return }
                let input: ArgumentStage.Input
                if parsed.method == "POST" {
                    input = try ArgumentStage.input(
                        fromBody: parsed.request.body, contentType: parsed.request.header("content-type"),
                        maxBytes: 1 << 20)
                } else {
                    input = .query(parsed.query)
                }
                checkTyped(try ArgumentStage.arguments(input, for: function, spec: spec))
            }
        }

        static func checkTyped(_ arguments: ConvexValue) {
            guard case .object = arguments else { fail("arguments that are not an object: \(arguments)") }
            do {
                try arguments.checkLimits()
            } catch {
                fail("typed arguments over Convex's limits: \(error)")
            }
        }

        static func checkHeaderFields(_ request: GatewayRequest) {
            for (name, value) in request.headers {
                FieldValue.of(value) { field in
                    require(
                        Accept.acceptsEventStream(value) == Accept.acceptsEventStream(field),
                        "Accept readers disagree on '\(name): \(value)'")
                    require(
                        AcceptEncoding.acceptsGzip(value) == AcceptEncoding.acceptsGzip(field),
                        "Accept-Encoding readers disagree on '\(name): \(value)'")
                    for etag in [#""abc""#, #"W/"abc""#, "*"] {
                        require(
                            EntityTag.ifNoneMatch(value, matches: etag, gzip: #""abc-gzip""#)
                                == EntityTag.ifNoneMatch(field, matches: etag, gzip: #""abc-gzip""#),
                            "If-None-Match readers disagree on '\(name): \(value)' for \(etag)")
                    }
                }
                _ = ClientAddress.rateLimitKey(value)
                _ = Prefer.wait(value)
                _ = try? SnapshotFloor.minTimestamp(value)
            }
        }

        /// The request the input describes.
        static func request(from bytes: [UInt8]) -> GatewayRequest {
            var lines = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
                .makeIterator()
            let method = String(decoding: lines.next() ?? [], as: UTF8.self)
            let target = String(decoding: lines.next() ?? [], as: UTF8.self)
            var rest = lines.next().map(Array.init) ?? []
            var headers: [String: String] = [:]
            while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
                let line = rest[..<newline]
                rest = Array(rest[(newline + 1)...])
                if line.isEmpty { break }
                let text = String(decoding: line, as: UTF8.self)
                if let colon = text.firstIndex(of: ":") {
                    headers[String(text[..<colon])] = String(text[text.index(after: colon)...].drop { $0 == " " })
                }
            }
            let path: String
            let query: String?
            if let mark = target.firstIndex(of: "?") {
                path = String(target[..<mark])
                query = String(target[target.index(after: mark)...])
            } else {
                path = target
                query = nil
            }
            return GatewayRequest(method: method, rawPath: path, rawQuery: query, headers: headers, body: rest)
        }
    }
#else
    import FuzzSupport

    enum RequestProperties {
        static func check(_ bytes: [UInt8]) { internalTypesNeedADebugBuild("fuzz-request") }
    }
#endif
