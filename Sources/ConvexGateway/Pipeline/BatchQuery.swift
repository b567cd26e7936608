import ConvexValues

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
/// of the queries changes).
extension GatewayCore {
    func batchQuery(_ request: ParsedRequest, _ context: ResponseContext) throws(GatewayError) -> GatewayHandling {
        let parsed = try StreamSubscriptions(
            request.query, limit: configuration.maxStreamSubscriptions, kind: .batch)
        var queries: [(id: String, function: String, args: ConvexValue)] = []
        var keys: [SubscriptionHub.Key] = []
        let (identityID, upstream) = pool.upstream(for: request.identity)
        for query in parsed.subscriptions {
            let args: ConvexValue
            do {
                args = try arguments(query.input, for: query.function)
            } catch {
                throw error.naming(query: query.id)
            }
            queries.append((query.id, query.function.canonical, args))
            keys.append(SubscriptionHub.Key(identity: identityID, function: query.function, args: args))
        }
        let format = request.format
        let floor = snapshotFloor(request)
        let longPoll = longPollWait(request, context)
        return .deferred { [self, keys, queries] in
            if let refusal = await readyToRead(at: floor, identity: identityID, upstream: upstream, format: format) {
                return .response(refusal)
            }
            let answer: GatewayResponse
            switch await readBatch(keys: keys, args: queries.map(\.args), upstream: upstream, format: format) {
            case .failure(let error):
                return .response(errorResponse(error, format: format))
            case .success(let snapshot):
                answer = batchResponse(ids: queries.map(\.id), snapshot, format: format)
                guard let longPoll, Self.holds(context, answer) else {
                    return .response(answer)
                }
                // The client holds this snapshot: wait for any of the queries to change.
                let members = zip(keys, zip(queries, snapshot.bodies)).map { key, pair in
                    SubscriptionHub.Member(key: key, args: pair.0.args, held: pair.1.current.hash)
                }
                var waited = answer
                if await hub.nextChange(
                    of: members, upstream: upstream, format: format, timeout: .seconds(longPoll)) != nil,
                    let changed = hub.currentBodies(for: keys, format: format)
                {
                    waited = batchResponse(ids: queries.map(\.id), changed, format: format)
                } else {
                    waited.setHeader(SnapshotFloor.timestampHeader, String(hub.sessionTimestamp(of: identityID)))
                }
                waited.headers.append(("Preference-Applied", "wait=\(longPoll)"))
                return .response(waited)
            }
        }
    }

    /// Waits for the first result of every query (all at once), then reads them all at one snapshot.
    private func readBatch(
        keys: [SubscriptionHub.Key], args: [ConvexValue], upstream: any ConvexUpstream, format: OutputFormat
    ) async -> Result<(ts: UInt64, bodies: [SubscriptionHub.CurrentBody]), GatewayError> {
        let hub = self.hub
        let timeout = configuration.upstreamTimeout
        // Results expire only after the keep-warm period, so a second try finds them all unless one just ended.
        for _ in 0..<2 {
            if let snapshot = hub.currentBodies(for: keys, format: format) { return .success(snapshot) }
            let arrived = await withTaskGroup(of: Bool.self) { group in
                for (key, args) in zip(keys, args) {
                    group.addTask {
                        await hub.firstResult(for: key, args: args, upstream: upstream, timeout: timeout) != nil
                    }
                }
                return await group.allSatisfy { $0 }
            }
            if !arrived {
                return .failure(
                    hub.subscriptionCount >= configuration.maxSubscriptions
                        ? .overloaded : .upstreamTimeout(seconds: timeout.seconds))
            }
        }
        if let snapshot = hub.currentBodies(for: keys, format: format) { return .success(snapshot) }
        return .failure(.upstreamTimeout(seconds: timeout.seconds))
    }

    /// The batch's answer: its values and errors by id, the snapshot's timestamp, and one `ETag` over every result.
    /// Refused credentials (for every query at once) are the answer's own 401.
    private func batchResponse(
        ids: [String], _ snapshot: (ts: UInt64, bodies: [SubscriptionHub.CurrentBody]), format: OutputFormat
    ) -> GatewayResponse {
        var values: [UInt8] = []
        var errors: [UInt8] = []
        var tag = FNV1a()
        for (id, read) in zip(ids, snapshot.bodies) {
            tag.combine(Array(id.utf8))
            tag.combine(0)
            let hash = read.current.hash
            tag.combine((0..<8).map { UInt8(truncatingIfNeeded: hash >> ($0 * 8)) })
            let name = ConvexValue.string(id).convexJSON()
            switch read.current.result {
            case .value:
                values += values.isEmpty ? [UInt8(ascii: "{")] : [UInt8(ascii: ",")]
                values += name + [UInt8(ascii: ":")] + read.body
            case .failure(let failure):
                if case .unauthenticated = failure { return errorResponse(failure, format: format) }
                // {"error":{…}} gives its inner object.
                let body = failure.gatewayError.body { render($0, format) }
                errors += errors.isEmpty ? [UInt8(ascii: "{")] : [UInt8(ascii: ",")]
                errors += name + [UInt8(ascii: ":")] + body.dropFirst(9).dropLast()
            }
        }
        var body = Array(#"{"ts":""#.utf8) + Array(String(snapshot.ts).utf8) + Array(#"","values":"#.utf8)
        body += values.isEmpty ? Array("{}".utf8) : values + [UInt8(ascii: "}")]
        if !errors.isEmpty {
            body += Array(#","errors":"#.utf8) + errors + [UInt8(ascii: "}")]
        }
        body.append(UInt8(ascii: "}"))
        var response = GatewayResponse.json(body)
        response.headers.append(("ETag", Self.etag(hash: tag.value, format: format)))
        response.headers.append((SnapshotFloor.timestampHeader, String(snapshot.ts)))
        return response
    }
}
