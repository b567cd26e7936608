import ConvexSyncProtocol
import ConvexValues
import Foundation
import HTTPFields

/// `POST /mutations`: a page's mutations in the order it called them, run one after another as requests of the page's
/// sync session (`Convex-Session-Id`), so the deployment runs a resent one once (docs/routes-and-errors.md).
///
/// ```
/// {"mutations":[{"requestId":<0…2³²-1, increasing>,"path":"<module:function>","args":{…}},…]}   (1…100)
/// → {"results":[{"requestId":n,"value":…,"ts":"<commit>"} | {"requestId":n,"status":…,"error":{…}},…]}
/// ```
struct MutationBatch: Sendable {
    struct Entry: Sendable {
        var requestId: UInt32
        var function: UdfPath
        var args: ConvexValue
    }

    var session: String
    var entries: [Entry]

    /// The most mutations one request carries.
    static let maxEntries = 100

    /// Reads the session header and the body.
    /// - Throws: 400 naming what is wrong; nothing of a batch with a bad entry runs.
    init(_ request: ParsedRequest, arguments: TypedArguments) throws(GatewayError) {
        let header = request.request.header(HeaderName.convexSessionId)
        guard let header, let uuid = UUID(uuidString: header), uuid.uuidString.lowercased() == header else {
            throw GatewayError.badRequest(
                "POST /mutations needs a Convex-Session-Id header: the page's session, a lowercase UUID",
                code: .invalidSession)
        }
        session = header
        guard case .body(let body, _) = try arguments.bodyInput(request), case .object(let fields) = body,
            case .array(let list)? = fields["mutations"], fields.count == 1
        else {
            throw Self.invalid("The body must be {\"mutations\": [{\"requestId\", \"path\", \"args\"}, …]}")
        }
        guard (1...Self.maxEntries).contains(list.count) else {
            throw Self.invalid("A batch holds 1 to \(Self.maxEntries) mutations, not \(list.count)")
        }
        entries = []
        for (index, item) in list.enumerated() {
            let entry = try Self.entry(item, at: index)
            if let last = entries.last, entry.requestId <= last.requestId {
                throw Self.invalid("mutations[\(index)].requestId must be greater than the one before it")
            }
            entries.append(entry)
        }
    }

    private static func entry(_ item: ConvexValue, at index: Int) throws(GatewayError) -> Entry {
        guard case .object(let fields) = item, case .string(let path)? = fields["path"],
            let requestId = fields["requestId"].flatMap(Self.requestId)
        else {
            throw invalid(
                "mutations[\(index)] must be {\"requestId\": <integer 0…4294967295>, \"path\": \"module:function\", "
                    + "\"args\": {…}}")
        }
        let args = fields["args"] ?? .object([:])
        guard case .object = args else { throw invalid("mutations[\(index)].args must be an object") }
        do {
            return Entry(requestId: requestId, function: try UdfPath(parsing: path), args: args)
        } catch {
            throw GatewayError.badRequest(
                "Invalid function path '\(printable(error.path))' in mutations[\(index)]: \(error.message)",
                code: .invalidFunctionPath)
        }
    }

    private static func requestId(_ value: ConvexValue) -> UInt32? {
        switch value {
        case .int64(let number): UInt32(exactly: number)
        case .float64(let number): UInt32(exactly: number)
        default: nil
        }
    }

    private static func invalid(_ message: String) -> GatewayError {
        GatewayError.badRequest(message, code: .invalidMutations)
    }
}

extension Calls {
    /// Runs `batch` in order as its session's requests, each with the gateway's one deadline. A function's own
    /// failure fails its entry only; at the first entry with no answer (the deployment unreachable, the connection
    /// lost, the deadline passed) the batch stops, and that entry and the rest carry that failure: the page resends
    /// them, and the deployment's record of the session answers any that ran.
    /// - Throws: 429 `TooManyCalls`; 503 while the deployment is unreachable before the first entry; 401 when the
    ///   deployment refuses the caller's credentials at the first entry.
    func sessionMutations(_ batch: MutationBatch, _ request: ParsedRequest, arguments: TypedArguments)
        async throws(GatewayError) -> GatewayResponse
    {
        guard running.take(request.client) else { throw .tooManyCalls(limit: running.limit) }
        defer { running.release(request.client) }
        let outcomes = try await pool.withUpstream(for: request.identity, from: request.address) {
            _, upstream -> Result<[Result<UpstreamAnswer, GatewayError>], GatewayError> in
            do throws(UpstreamFailure) {
                try await upstream.waitUntilConnected(timeout: configuration.connectTimeout)
            } catch {
                return .failure(error.gatewayError(logging: logger))
            }
            return .success(await run(batch, upstream, arguments: arguments))
        }.get()
        if let first = outcomes.first, case .failure(let error) = first, error.code == .unauthenticated {
            throw error
        }
        return response(batch, outcomes, format: request.format)
    }

    private func run(_ batch: MutationBatch, _ upstream: any ConvexUpstream, arguments: TypedArguments) async
        -> [Result<UpstreamAnswer, GatewayError>]
    {
        var outcomes: [Result<UpstreamAnswer, GatewayError>] = []
        for entry in batch.entries {
            let outcome = await run(entry, session: batch.session, upstream, arguments: arguments)
            outcomes.append(outcome)
            if case .failure(let error) = outcome, Self.leftUnanswered(error) {
                // Nothing after an unanswered mutation runs before it does: the page resends from here.
                outcomes += Array(repeating: outcome, count: batch.entries.count - outcomes.count)
                break
            }
        }
        return outcomes
    }

    private func run(
        _ entry: MutationBatch.Entry, session: String, _ upstream: any ConvexUpstream, arguments: TypedArguments
    ) async -> Result<UpstreamAnswer, GatewayError> {
        let input = ArgumentStage.Input.body(entry.args)
        let args: ConvexValue
        do throws(GatewayError) {
            args = try arguments.arguments(input, for: entry.function)
        } catch {
            return .failure(error)
        }
        let request = SessionRequest(session: session, requestId: entry.requestId)
        let timeout = configuration.upstreamTimeout
        let result = await FunctionSpecStore.retrying(with: functionSpecs, entry.function, input, args) {
            args -> Result<UpstreamAnswer, UpstreamFailure> in
            do throws(UpstreamFailure) {
                return .success(
                    try await upstream.mutation(entry.function.canonical, args: args, as: request, timeout: timeout))
            } catch {
                return .failure(error)
            }
        }
        return result.mapError { $0.gatewayError(logging: logger) }
    }

    /// Whether the mutation may not have been answered by the deployment: a resend is the way to know.
    private static func leftUnanswered(_ error: GatewayError) -> Bool {
        switch error.code {
        case .upstreamUnavailable, .upstreamConnectionLost, .upstreamTimeout, .overloaded, .unauthenticated: true
        default: false
        }
    }

    private func response(
        _ batch: MutationBatch, _ outcomes: [Result<UpstreamAnswer, GatewayError>], format: OutputFormat
    ) -> GatewayResponse {
        var body = Array(#"{"results":["#.utf8)
        var last: ConvexTimestamp?
        for (index, (entry, outcome)) in zip(batch.entries, outcomes).enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += #"{"requestId":"#.utf8
            body += String(entry.requestId).utf8
            switch outcome {
            case .success(let answer):
                body += #","value":"#.utf8
                body += render(answer.value, format)
                if let ts = answer.ts {
                    body += #","ts":""#.utf8
                    body += String(ts.nanoseconds).utf8
                    body.append(UInt8(ascii: "\""))
                    last = max(last ?? ts, ts)
                }
            case .failure(let error):
                body += #","status":"#.utf8
                body += String(error.status).utf8
                body += #","error":"#.utf8
                body += error.object { render($0, format) }
            }
            body.append(UInt8(ascii: "}"))
        }
        body += "]}".utf8
        var response = GatewayResponse.json(body)
        if let last {
            readYourWrites.committed(last)
            response.headers.append((HeaderName.convexTimestamp, String(last.nanoseconds)))
        }
        return response
    }
}
