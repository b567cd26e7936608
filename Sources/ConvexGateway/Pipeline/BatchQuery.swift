import ConvexSyncProtocol
import ConvexValues
import HTTPFields
import Logging

/// `GET /query?q.<id>=<module:function>&args.<id>=<JSON object>…`: many queries answered from one snapshot of the
/// database, by the same id and argument rules as multi-subscription streams (StreamSubscriptions.swift).
///
/// ```
/// {"ts":"<Convex timestamp>","values":{"<id>":<value>,…},"errors":{"<id>":{"code":…,"message":…},…}}
/// ```
///
/// Every query is a live subscription of the hub (kept warm as a `GET`'s is); once each has a result, all are read
/// under the hub's lock at once, so they hold at one timestamp, the one the answer names. `errors` appears when a
/// query failed (its id is then not in `values`); refused credentials fail the whole request (401). The answer has
/// one `ETag` over every result, and takes `If-None-Match` (304) and `Prefer: wait=<seconds>` (a long-poll until any
/// of the queries changes). With a rate limit, a batch of `N` queries costs `N` requests.
struct BatchQueries: Sendable {
    let hub: SubscriptionHub
    let pool: UpstreamPool
    /// The rate limit, charged one request per query.
    let access: AccessControl
    let readYourWrites: ReadYourWrites
    let arguments: TypedArguments
    let configuration: GatewayConfiguration
    let render: @Sendable (ConvexValue, OutputFormat) -> [UInt8]
    let logger: Logger
    /// The long-polls each client holds waiting, against its share (the one the queries' long-polls count in too).
    let longPolls: ClientShares

    func get(_ request: ParsedRequest, _ context: ResponseContext) throws(GatewayError) -> GatewayAnswer {
        let parsed = try StreamSubscriptions(request.query, limit: configuration.maxStreamSubscriptions, kind: .batch)
        try access.chargeSubscriptions(parsed.subscriptions.count, remoteAddress: request.request.remoteAddress)
        let queries = try parsed.typed(by: arguments)
        let (identityID, upstream) = try pool.upstream(for: request.identity, from: request.address)
        let keys = queries.map { SubscriptionHub.Key(identity: identityID, function: $0.function, args: $0.args) }
        let caller = SubscriptionCaller(client: request.client)
        let format = request.format
        let floor = readYourWrites.floor(minTimestamp: request.minTimestamp)
        let longPoll = LongPoll.wait(request, context, maxSeconds: configuration.maxWaitSeconds)
        let ids = queries.map { $0.id ?? "" }
        return .later { [keys, queries] () async throws(GatewayError) -> GatewayOutcome in
            try await readYourWrites.ready(at: floor, identity: identityID, upstream: upstream)
            let snapshot = try await readBatch(
                ids: ids, keys: keys, args: queries.map(\.args), caller: caller, upstream: upstream, format: format)
            let answer = try batchResponse(ids: ids, snapshot, format: format)
            guard let longPoll, LongPoll.holds(context, answer) else {
                return .response(answer)
            }
            // The client holds this snapshot: wait for any of the queries to change.
            let members = zip(keys, zip(queries, snapshot.bodies)).map { key, pair in
                SubscriptionHub.Member(key: key, args: pair.0.args, held: pair.1.current.hash)
            }
            let waited = try await LongPoll.hold(
                answer, members: members, caller: caller, waiting: (longPolls, request.client), hub: hub,
                upstream: upstream, format: format, seconds: longPoll
            ) { _, _ throws(GatewayError) in
                // The whole batch again, all at one snapshot.
                guard let changed = hub.currentBodies(for: keys, format: format) else { return nil }
                return try batchResponse(ids: ids, changed, format: format)
            }
            return .response(waited)
        }
    }

    /// Waits for the first result of every query (all at once), then reads them all at one snapshot.
    /// - Throws: why a query has no first result, naming it (`ids` are the queries' ids, in the order of `keys`).
    private func readBatch(
        ids: [String], keys: [SubscriptionHub.Key], args: [ConvexValue], caller: SubscriptionCaller,
        upstream: any ConvexUpstream,
        format: OutputFormat
    ) async throws(GatewayError) -> (ts: ConvexTimestamp, bodies: [SubscriptionHub.CurrentBody]) {
        let timeout = configuration.upstreamTimeout
        // Results expire only after the keep-warm period, so a second try finds them all unless one just ended.
        for _ in 0..<2 {
            if let snapshot = hub.currentBodies(for: keys, format: format) { return snapshot }
            let firsts = await hub.firstResults(
                of: Array(zip(keys, args)), caller: caller, upstream: upstream, timeout: timeout)
            let missing = zip(ids, firsts).filter { $0.1.read == nil }
            // A subscription limit first: its 503 or 429 says when to come back.
            if let (id, first) = missing.first(where: { $0.1.isFull }) ?? missing.first {
                throw await hub.noFirstResult(first, timeout: timeout, upstream: upstream).naming(query: id)
            }
        }
        if let snapshot = hub.currentBodies(for: keys, format: format) { return snapshot }
        throw .upstreamTimeout(seconds: timeout.seconds)
    }

    /// The batch's answer: its values and errors by id, the snapshot's timestamp, and one `ETag` over every result.
    /// - Throws: refused credentials (for every query at once) as the answer's own 401.
    private func batchResponse(
        ids: [String], _ snapshot: (ts: ConvexTimestamp, bodies: [SubscriptionHub.CurrentBody]),
        format: OutputFormat
    ) throws(GatewayError) -> GatewayResponse {
        var values: [UInt8] = []
        var errors: [UInt8] = []
        var tag = ContentHasher()
        for (id, read) in zip(ids, snapshot.bodies) {
            tag.combine(Array(id.utf8))
            tag.combine(0)
            let hash = read.current.hash.value
            tag.combine((0..<8).map { UInt8(truncatingIfNeeded: hash >> ($0 * 8)) })
            let name = ConvexValue.string(id).convexJSON()
            switch read.current.result {
            case .value:
                values += values.isEmpty ? [UInt8(ascii: "{")] : [UInt8(ascii: ",")]
                values += name + [UInt8(ascii: ":")] + read.body
            case .failure(let failure):
                if case .unauthenticated = failure { throw failure.gatewayError(logging: logger) }
                let object = failure.gatewayError(logging: logger).object { render($0, format) }
                errors += errors.isEmpty ? [UInt8(ascii: "{")] : [UInt8(ascii: ",")]
                errors += name + [UInt8(ascii: ":")] + object
            }
        }
        var body =
            Array(#"{"ts":""#.utf8) + Array(String(snapshot.ts.nanoseconds).utf8) + Array(#"","values":"#.utf8)
        body += values.isEmpty ? Array("{}".utf8) : values + [UInt8(ascii: "}")]
        if !errors.isEmpty {
            body += Array(#","errors":"#.utf8) + errors + [UInt8(ascii: "}")]
        }
        body.append(UInt8(ascii: "}"))
        var response = GatewayResponse.json(body)
        response.headers.append((HeaderName.eTag, Queries.etag(hash: tag.hash, format: format)))
        response.headers.append((HeaderName.convexTimestamp, String(snapshot.ts.nanoseconds)))
        return response
    }
}
