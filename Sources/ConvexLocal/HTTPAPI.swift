import ConvexSyncProtocol
import ConvexValues
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TimeSource

/// A non-function error of the HTTP API: `{"code", "message"}` with the status of reference §3.3.
struct HTTPAPIError: Error, Sendable {
    var status: HTTPResponse.Status
    var code: String
    var message: String

    static func badRequest(_ code: String, _ message: String) -> HTTPAPIError {
        HTTPAPIError(status: .badRequest, code: code, message: message)
    }

    var response: Response {
        var w: [UInt8] = Array(#"{"code":"#.utf8)
        w += ConvexValue.string(code).convexJSON()
        w += Array(#","message":"#.utf8)
        w += ConvexValue.string(message).convexJSON()
        w.append(UInt8(ascii: "}"))
        return jsonResponse(w, status: status)
    }
}

func jsonResponse(_ bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
    Response(
        status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
}

/// The HTTP functions API of reference §3 over a ``DeploymentCore``.
struct HTTPAPI: Sendable {
    let core: DeploymentCore
    /// Public API request bodies may be up to 16 MiB + 2000 bytes.
    static let maxBodySize = (16 << 20) + 2000

    static let convexClientHeader = HTTPField.Name("convex-client")!

    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("/") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain"],
                body: .init(
                    byteBuffer: ByteBuffer(string: "This Convex deployment is running. See https://docs.convex.dev/.")))
        }
        router.post("/api/query") { request, _ in await handle(request) { try await call(request, kind: .query) } }
        router.get("/api/query") { request, _ in await handle(request) { try await getQuery(request) } }
        router.post("/api/mutation") { request, _ in await handle(request) { try await call(request, kind: .mutation) }
        }
        router.post("/api/action") { request, _ in await handle(request) { try await call(request, kind: .action) } }
        router.post("/api/function") { request, _ in
            await handle(request) { try await call(request, kind: nil, adminOnly: true) }
        }
        router.post("/api/run/**") { request, context in
            await handle(request) { try await run(request, segments: context.parameters.getCatchAll()) }
        }
        router.post("/api/query_batch") { request, _ in await handle(request) { try await queryBatch(request) } }
        router.post("/api/query_ts") { request, _ in
            await handle(request) {
                jsonResponse(Array(#"{"ts":""#.utf8) + Array(core.store.snapshot.ts.base64.utf8) + Array(#""}"#.utf8))
            }
        }
        router.get("/api/function_spec") { request, _ in await handle(request) { try await functionSpec(request) } }
        router.post("/api/function_spec") { request, _ in await handle(request) { try await functionSpec(request) } }
    }

    private func handle(_ request: Request, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as HTTPAPIError {
            return error.response
        } catch is NIOTooManyBytesError {
            return HTTPAPIError(
                status: .contentTooLarge, code: "PayloadTooLarge",
                message: "Request body is larger than the \(Self.maxBodySize) bytes allowed"
            ).response
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return HTTPAPIError(
                status: .contentTooLarge, code: "PayloadTooLarge",
                message: "Request body is larger than the \(Self.maxBodySize) bytes allowed"
            ).response
        } catch {
            core.logger.error(
                "HTTP API request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return HTTPAPIError(
                status: .internalServerError, code: "InternalServerError",
                message: "Your request couldn't be completed. Try again later."
            ).response
        }
    }

    // MARK: Request parsing

    private func checkClientHeader(_ request: Request) throws(HTTPAPIError) -> String? {
        guard let header = request.headers[Self.convexClientHeader] else { return nil }
        if header.split(separator: "-").count < 2 {
            throw .badRequest(
                "InvalidClientVersion", "Invalid Convex-Client header \"\(header)\": expected <client>-<version>")
        }
        return header
    }

    private func caller(_ request: Request) async throws(HTTPAPIError) -> CallerIdentity {
        var authorization = request.headers[.authorization]
        if authorization == nil, let key = request.uri.queryParameters["adminKey"] {
            authorization = "Convex \(key)"
        }
        do {
            return try await core.caller(authorization: authorization, now: core.clock.wallSeconds)
        } catch {
            throw HTTPAPIError(
                status: error.isBadRequest ? .badRequest : .unauthorized, code: error.code, message: error.message)
        }
    }

    private func readBody(_ request: Request) async throws -> [String: ConvexValue] {
        var request = request
        let buffer = try await request.collectBody(upTo: Self.maxBodySize)
        if excessiveNesting(buffer.readableBytesView) != nil {
            throw HTTPAPIError.badRequest("BadJsonBody", "Failed to parse the JSON body: Value is too nested")
        }
        let value: ConvexValue
        do {
            value = try ConvexValue(envelopeJSON: buffer.readableBytesView)
        } catch {
            throw HTTPAPIError.badRequest("BadJsonBody", "Failed to parse the JSON body: \(error.description)")
        }
        guard case .object(let fields) = value else {
            throw HTTPAPIError.badRequest("BadJsonBody", "The JSON body must be an object")
        }
        return fields
    }

    private func format(
        _ fields: [String: ConvexValue], request: Request, clientHeader: String?, defaultFormat: HTTPAPIFormat? = nil
    ) throws(HTTPAPIError) -> HTTPAPIFormat {
        switch fields["format"] {
        case nil, .null?:
            return defaultFormat ?? HTTPAPIFormat.defaultFormat(convexClient: clientHeader)
        case .string(let text)?:
            guard let f = HTTPAPIFormat(parameter: text) else {
                throw .badRequest(
                    "BadFormat",
                    "Invalid format \"\(text)\": the format param must be one of [`json`, `convex_encoded_json`, `export_json`]"
                )
            }
            return f
        default:
            throw .badRequest("BadFormat", "The format param must be a string")
        }
    }

    private func path(_ fields: [String: ConvexValue]) throws(HTTPAPIError) -> String {
        guard case .string(let path)? = fields["path"] else {
            throw .badRequest(
                "BadJsonBody", fields["path"] == nil ? "Missing field `path`" : "Field `path` must be a string")
        }
        return try checkedPath(path)
    }

    private func checkedPath(_ path: String) throws(HTTPAPIError) -> String {
        do {
            _ = try UdfPath(parsing: path)
        } catch {
            throw .badRequest("BadConvexModuleIdentifier", error.description)
        }
        return path
    }

    private func args(_ value: ConvexValue?) throws(HTTPAPIError) -> [String: ConvexValue] {
        let named: [String: ConvexValue]
        switch value {
        case nil, .null?:
            named = [:]
        case .object(let fields)?:
            named = fields
        case .array(let items)?:
            guard items.count == 1, case .object(let fields) = items[0] else {
                throw .badRequest(
                    "InvalidArgs", "`args` must be an object of named arguments (or an array holding one)")
            }
            named = fields
        default:
            throw .badRequest("InvalidArgs", "`args` must be an object of named arguments")
        }
        do {
            try ConvexValue.object(named).checkLimits()
        } catch {
            throw .badRequest(error.code.rawValue, "Invalid args at \(error.path): \(error.message)")
        }
        return named
    }

    // MARK: Endpoints

    private func call(_ request: Request, kind: FunctionKind?, adminOnly: Bool = false) async throws -> Response {
        let clientHeader = try checkClientHeader(request)
        let caller = try await caller(request)
        if adminOnly && !caller.isAdmin {
            throw HTTPAPIError(status: .forbidden, code: "Unauthorized", message: "This endpoint requires an admin key")
        }
        let fields = try await readBody(request)
        let format = try format(fields, request: request, clientHeader: clientHeader)
        let path = try path(fields)
        let args = try args(fields["args"])
        let outcome: FunctionOutcome
        switch kind {
        case .query?: outcome = core.engine.runQuery(path: path, args: args, caller: caller)
        case .mutation?: outcome = core.engine.runMutation(path: path, args: args, caller: caller)
        case .action?: outcome = await core.engine.runAction(path: path, args: args, caller: caller)
        case nil: outcome = await core.engine.run(path: path, args: args, caller: caller)
        }
        return jsonResponse(udfResponse(outcome, format: format))
    }

    private func getQuery(_ request: Request) async throws -> Response {
        let clientHeader = try checkClientHeader(request)
        let caller = try await caller(request)
        let params = request.uri.queryParameters
        guard let rawPath = params["path"] else {
            throw HTTPAPIError.badRequest("BadQueryParams", "Missing query parameter `path`")
        }
        let path = try checkedPath(String(rawPath))
        var argsValue: ConvexValue? = nil
        if let rawArgs = params["args"] {
            if excessiveNesting(String(rawArgs).utf8) != nil {
                throw HTTPAPIError.badRequest("BadQueryParams", "Query parameter `args` is too nested")
            }
            do {
                argsValue = try ConvexValue(envelopeJSON: Array(String(rawArgs).utf8))
            } catch {
                throw HTTPAPIError.badRequest(
                    "BadQueryParams", "Query parameter `args` is not valid JSON: \(error.description)")
            }
        }
        var formatFields: [String: ConvexValue] = [:]
        if let f = params["format"] { formatFields["format"] = .string(String(f)) }
        let format = try format(formatFields, request: request, clientHeader: clientHeader)
        let outcome = core.engine.runQuery(path: path, args: try args(argsValue), caller: caller)
        return jsonResponse(udfResponse(outcome, format: format))
    }

    private func run(_ request: Request, segments: [Substring]) async throws -> Response {
        let clientHeader = try checkClientHeader(request)
        let caller = try await caller(request)
        let decoded = segments.map { String($0).removingPercentEncoding ?? String($0) }
        guard decoded.count >= 2, let function = decoded.last else {
            throw HTTPAPIError.badRequest(
                "MissingIdentifier", "The path must be /api/run/<module path>/<function name>")
        }
        let path = try checkedPath(decoded.dropLast().joined(separator: "/") + ":" + function)
        let fields = try await readBody(request)
        let format = try format(fields, request: request, clientHeader: clientHeader, defaultFormat: .json)
        let outcome = await core.engine.run(path: path, args: try args(fields["args"]), caller: caller)
        return jsonResponse(udfResponse(outcome, format: format))
    }

    private func queryBatch(_ request: Request) async throws -> Response {
        let clientHeader = try checkClientHeader(request)
        let caller = try await caller(request)
        let fields = try await readBody(request)
        guard case .array(let queries)? = fields["queries"] else {
            throw HTTPAPIError.badRequest("BadJsonBody", "Field `queries` must be an array")
        }
        var parsed: [(path: String, args: [String: ConvexValue], format: HTTPAPIFormat)] = []
        for query in queries {
            guard case .object(let q) = query else {
                throw HTTPAPIError.badRequest("BadJsonBody", "Each query must be an object")
            }
            parsed.append(
                (try path(q), try args(q["args"]), try format(q, request: request, clientHeader: clientHeader)))
        }
        let snapshot = core.store.snapshot
        var out: [UInt8] = Array(#"{"results":["#.utf8)
        for (i, q) in parsed.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += udfResponse(
                core.engine.runQuery(path: q.path, args: q.args, caller: caller, snapshot: snapshot), format: q.format)
        }
        out += Array("]}".utf8)
        return jsonResponse(out)
    }

    private func functionSpec(_ request: Request) async throws -> Response {
        guard try await caller(request).isAdmin else {
            throw HTTPAPIError(
                status: .forbidden, code: "Unauthorized",
                message: "The function spec requires an admin key (`Authorization: Convex <admin key>`)")
        }
        return jsonResponse(core.registry.functionSpec(url: nil).convexJSON())
    }

    /// The `UdfResponse` envelope (reference §3.2): `logLines` omitted when empty, `errorData` only for `ConvexError`.
    func udfResponse(_ outcome: FunctionOutcome, format: HTTPAPIFormat) -> [UInt8] {
        var out: [UInt8] = []
        switch outcome.result {
        case .success(let value):
            out += Array(#"{"status":"success","value":"#.utf8)
            out += format.render(value)
        case .failure(let error):
            out += Array(#"{"status":"error","errorMessage":"#.utf8)
            out += ConvexValue.string(error.clientMessage(requestId: makeRequestId())).convexJSON()
            if let data = error.errorData {
                out += Array(#","errorData":"#.utf8)
                out += format.render(data)
            }
        }
        if !outcome.logLines.isEmpty {
            out += Array(#","logLines":"#.utf8)
            out += ConvexValue.array(outcome.logLines.map { .string($0) }).convexJSON()
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
