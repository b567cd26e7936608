import ConvexSyncProtocol
import ConvexValues
import Testing

@testable import ConvexLocal

/// The per-socket state machine, without I/O.
@Suite struct SyncSessionTests {
    let ts1 = ConvexTimestamp(nanoseconds: 1_000)
    let ts2 = ConvexTimestamp(nanoseconds: 2_000)

    func connected(adminKey: String? = "key") -> SyncSession {
        var session = SyncSession(adminKey: adminKey)
        let actions = session.receive(
            .connect(.init(sessionId: "s", connectionCount: 0, lastCloseReason: "InitialConnect")), latestTs: ts1)
        #expect(actions.isEmpty, "nothing is sent in reply to Connect")
        return session
    }

    func add(_ ids: [UInt32], base: UInt32 = 0) -> ClientMessage {
        .modifyQuerySet(
            .init(
                baseVersion: base, newVersion: base + 1,
                modifications: ids.map { .add(.init(queryId: $0, udfPath: "m:q\($0)")) }))
    }

    @Test func firstTransitionStartsAtZeroAndVersionsAreContiguous() throws {
        var session = connected()
        let r1 = session.receive(add([0, 1]), latestTs: ts1)
        #expect(r1 == [.update])
        #expect(session.pendingEvaluations().map(\.queryId) == [0, 1])
        let first = session.completeUpdate(
            evaluations: [0: .updated(value: 1.0, logLines: []), 1: .updated(value: 2.0, logLines: ["[LOG] 'x'"])],
            readTables: [0: ["a"], 1: ["b"]], ts: ts1)
        guard case .transition(let t1)? = first else { Issue.record("no transition"); return }
        #expect(t1.startVersion == .initial)
        #expect(t1.endVersion == StateVersion(querySet: 1, identity: 0, ts: ts1))
        #expect(t1.modifications.count == 2)

        // Only the query that read table "a" is invalidated; an unchanged result is omitted and nothing is sent.
        let r2 = session.invalidate(tables: ["a"])
        #expect(r2)
        #expect(session.pendingEvaluations().map(\.queryId) == [0])
        let r3 = session.completeUpdate(
            evaluations: [0: .updated(value: 1.0, logLines: [])], readTables: [0: ["a"]], ts: ts2)
        #expect(r3 == nil)

        // A changed result is sent, starting where the last Transition ended.
        _ = session.invalidate(tables: ["a"])
        guard
            case .transition(let t2)? = session.completeUpdate(
                evaluations: [0: .updated(value: 5.0, logLines: [])], readTables: [0: ["a"]], ts: ts2)
        else {
            Issue.record("no transition"); return
        }
        #expect(t2.startVersion == t1.endVersion)
        #expect(t2.endVersion == StateVersion(querySet: 1, identity: 0, ts: ts2))
        #expect(t2.modifications == [.queryUpdated(queryId: 0, value: 5.0, logLines: [], journal: nil)])

        // Remove produces QueryRemoved and bumps the query-set version.
        let r4 = session.receive(
            .modifyQuerySet(.init(baseVersion: 1, newVersion: 2, modifications: [.remove(queryId: 1)])), latestTs: ts2)
        #expect(r4 == [.update])
        guard case .transition(let t3)? = session.completeUpdate(evaluations: [:], readTables: [:], ts: ts2) else {
            Issue.record("no transition"); return
        }
        #expect(t3.startVersion == t2.endVersion)
        #expect(t3.endVersion.querySet == 2)
        #expect(t3.modifications == [.queryRemoved(queryId: 1)])
    }

    @Test func timestampsNeverGoBack() {
        var session = connected()
        _ = session.receive(add([0]), latestTs: ts2)
        _ = session.completeUpdate(evaluations: [0: .updated(value: 1.0, logLines: [])], readTables: [:], ts: ts2)
        _ = session.receive(add([1], base: 1), latestTs: ts2)
        guard
            case .transition(let t)? = session.completeUpdate(
                evaluations: [1: .updated(value: 1.0, logLines: [])], readTables: [:], ts: ts1)
        else {
            Issue.record("no transition"); return
        }
        #expect(t.endVersion.ts == ts2)
    }

    @Test func protocolViolationsAreFatal() {
        var session = connected()
        let mismatch = session.receive(
            .modifyQuerySet(.init(baseVersion: 3, newVersion: 4, modifications: [])), latestTs: ts1)
        #expect(
            mismatch == [
                .send(.fatalError("Base version 3 passed up doesn't match the current version 0")),
                .close(code: 1000, reason: nil),
            ])
        #expect(session.phase == .closed)
        let r5 = session.receive(add([0]), latestTs: ts1)
        #expect(r5.isEmpty, "nothing after a fatal error")

        var dup = connected()
        let actions = dup.receive(
            .modifyQuerySet(
                .init(
                    baseVersion: 0, newVersion: 1,
                    modifications: [
                        .add(.init(queryId: 0, udfPath: "a")), .add(.init(queryId: 0, udfPath: "b")),
                    ])), latestTs: ts1)
        #expect(actions.first == .send(.fatalError("Duplicate query ID: 0")))

        var missing = connected()
        let removeUnknown = missing.receive(
            .modifyQuerySet(.init(baseVersion: 0, newVersion: 1, modifications: [.remove(queryId: 9)])), latestTs: ts1)
        #expect(removeUnknown.first == .send(.fatalError("Nonexistent query id: 9")))

        var notConnected = SyncSession(adminKey: nil)
        if case .send(.fatalError(let text))? = notConnected.receive(add([0]), latestTs: ts1).first {
            #expect(text.contains("must be Connect"))
        } else {
            Issue.record("expected a FatalError")
        }
    }

    @Test func clientAheadOfServerIsClosedWith1011() {
        var session = SyncSession(adminKey: nil)
        let actions = session.receive(
            .connect(.init(sessionId: "s", connectionCount: 1, lastCloseReason: "x", maxObservedTimestamp: ts2)),
            latestTs: ts1)
        #expect(actions == [.close(code: 1011, reason: "InternalServerError")])
    }

    @Test func authenticationBumpsIdentityAndRerunsQueries() throws {
        var session = connected()
        _ = session.receive(add([0, 1]), latestTs: ts1)
        _ = session.completeUpdate(
            evaluations: [0: .updated(value: 1.0, logLines: []), 1: .updated(value: 1.0, logLines: [])],
            readTables: [:], ts: ts1)
        let r6 = session.receive(.authenticate(.init(baseVersion: 0, token: .admin("key"))), latestTs: ts1)
        #expect(r6 == [.update])
        #expect(session.caller == .admin(actingAs: nil))
        #expect(session.pendingEvaluations().map(\.queryId) == [0, 1])
        guard
            case .transition(let t)? = session.completeUpdate(
                evaluations: [0: .updated(value: 1.0, logLines: []), 1: .updated(value: 1.0, logLines: [])],
                readTables: [:], ts: ts1)
        else {
            Issue.record("identity change must be announced"); return
        }
        #expect(t.endVersion.identity == 1)
        #expect(t.modifications.isEmpty)

        let bad = session.receive(.authenticate(.init(baseVersion: 1, token: .admin("wrong"))), latestTs: ts1)
        #expect(
            bad == [
                .send(
                    .authError(
                        .init(
                            error: "The provided admin key was invalid for this instance", baseVersion: 1,
                            authUpdateAttempted: true))),
                .close(code: 1000, reason: nil),
            ])
    }

    @Test func rejectedUserTokenIsAnAuthUpdateFailure() {
        var session = connected()
        let error = AuthenticationError.invalidAuthHeader("Could not validate token: Token expired 9 seconds ago")
        let actions = session.receive(
            .authenticate(.init(baseVersion: 0, token: .user("t"))), latestTs: ts1, now: 100,
            user: .failure(error))
        #expect(
            actions == [
                .send(.authError(.init(error: error.message, baseVersion: 0, authUpdateAttempted: true))),
                .close(code: 1000, reason: nil),
            ])
        #expect(session.phase == .closed)
    }

    func user(_ subject: String = "u", exp: Double?) -> UserIdentity {
        var claims: [String: ConvexValue] = ["sub": .string(subject), "iss": "https://i"]
        if let exp { claims["exp"] = .float64(exp) }
        return UserIdentity(claims: claims)
    }

    func authenticate(_ session: inout SyncSession, base: UInt32, exp: Double?, now: Double) -> [SyncSession.Action] {
        session.receive(
            .authenticate(.init(baseVersion: base, token: .user("t"))), latestTs: ts1, now: now,
            user: .success(user(exp: exp)))
    }

    @Test func expiredIdentityStopsServingUntilANewToken() {
        var session = connected()
        _ = session.receive(add([0, 1]), latestTs: ts1)
        _ = session.completeUpdate(
            evaluations: [0: .updated(value: 1.0, logLines: []), 1: .updated(value: 2.0, logLines: [])],
            readTables: [0: ["t"]], ts: ts1)
        #expect(authenticate(&session, base: 0, exp: 200, now: 100) == [.update])
        _ = session.completeUpdate(
            evaluations: [0: .updated(value: 1.0, logLines: []), 1: .updated(value: 2.0, logLines: [])],
            readTables: [0: ["t"]], ts: ts1)
        #expect(session.identityExpiration == 200)
        #expect(session.checkExpiry(now: 199.9).isEmpty)

        let expired = session.checkExpiry(now: 200)
        #expect(
            expired == [
                .send(
                    .authError(
                        .init(error: "Convex token identity expired", baseVersion: 1, authUpdateAttempted: false)))
            ])
        #expect(session.phase == .open, "the socket stays open for a fresh token")
        #expect(session.checkExpiry(now: 300).isEmpty, "said once")
        #expect(session.identityExpiration == nil)
        // Nothing is served for the expired identity: no query results, mutations and actions wait.
        let invalidated = session.invalidate(tables: ["t"])
        #expect(invalidated)
        #expect(session.pendingEvaluations().isEmpty)
        #expect(
            session.completeUpdate(evaluations: [0: .updated(value: 9.0, logLines: [])], readTables: [:], ts: ts2)
                == nil)
        #expect(session.receive(.mutation(.init(requestId: 0, udfPath: "m:f")), latestTs: ts1, now: 201).isEmpty)
        #expect(session.receive(.action(.init(requestId: 1, udfPath: "a:f")), latestTs: ts1, now: 201).isEmpty)
        #expect(session.receive(add([2], base: 1), latestTs: ts1, now: 201) == [.update])
        #expect(session.pendingEvaluations().isEmpty)

        // A fresh token on the same socket resumes everything: every query re-runs, held requests run in order.
        let resumed = authenticate(&session, base: 1, exp: 400, now: 201)
        #expect(
            resumed == [
                .update, .runMutation(.init(requestId: 0, udfPath: "m:f")),
                .runAction(.init(requestId: 1, udfPath: "a:f")),
            ])
        #expect(session.pendingEvaluations().map(\.queryId) == [0, 1, 2])
        guard
            case .transition(let t)? = session.completeUpdate(
                evaluations: [
                    0: .updated(value: 9.0, logLines: []), 1: .updated(value: 2.0, logLines: []),
                    2: .updated(value: 3.0, logLines: []),
                ],
                readTables: [:], ts: ts2)
        else { Issue.record("the resumed identity gets a Transition"); return }
        #expect(t.endVersion.identity == 2 && t.endVersion.querySet == 2)
        #expect(t.modifications.map(\.queryId) == [0, 2], "unchanged results are not sent again")
        #expect(session.identityExpiration == 400)
    }

    @Test func tokenInsideTheLeewayButPastExpiryExpiresAtOnce() {
        var session = connected()
        let actions = authenticate(&session, base: 0, exp: 97, now: 100)
        #expect(
            actions == [
                .send(
                    .authError(
                        .init(error: "Convex token identity expired", baseVersion: 1, authUpdateAttempted: false)))
            ])
        #expect(session.phase == .open)
    }

    @Test func identitiesWithoutExpiryNeverExpire() {
        var session = connected()
        #expect(authenticate(&session, base: 0, exp: nil, now: 100) == [.update])
        #expect(session.identityExpiration == nil)
        #expect(session.checkExpiry(now: .greatestFiniteMagnitude).isEmpty)
        // Admins acting as a user with an `exp` are not users with tokens.
        var admin = connected()
        _ = admin.receive(
            .authenticate(.init(baseVersion: 0, token: .admin("key", actingAs: ["subject": "u", "exp": 1.0]))),
            latestTs: ts1)
        #expect(admin.identityExpiration == nil)
    }

    /// Past its bound of running actions a socket refuses the one action over it, answered at once, and stays open;
    /// an action finishing frees a place.
    @Test func anActionOverTheBoundIsRefusedAloneAndTheSocketStaysOpen() {
        var session = SyncSession(adminKey: nil, maxInflightActions: 2)
        _ = session.receive(
            .connect(.init(sessionId: "s", connectionCount: 0, lastCloseReason: "InitialConnect")), latestTs: ts1)
        #expect(session.receive(.action(.init(requestId: 1, udfPath: "a:f")), latestTs: ts1).count == 1)
        #expect(session.receive(.action(.init(requestId: 2, udfPath: "a:f")), latestTs: ts1).count == 1)
        let refused = session.receive(.action(.init(requestId: 3, udfPath: "a:f")), latestTs: ts1)
        guard refused.count == 1, case .send(.actionResponse(let response)) = refused[0],
            case .failure(let message, nil) = response.result
        else {
            Issue.record("expected a refusal: \(refused)"); return
        }
        #expect(response.requestId == 3)
        #expect(message.hasPrefix("[Request ID: "))
        #expect(
            message.hasSuffix(
                "] Server Error\nTooManyInflightActionsForSingleClient: Inflight actions overloaded for a single "
                    + "client, max concurrency: 2"))
        #expect(session.phase == .open)
        #expect(session.inflightActions == 2)
        _ = session.actionCompleted(.init(requestId: 1, result: .success(.null)))
        #expect(
            session.receive(.action(.init(requestId: 4, udfPath: "a:f")), latestTs: ts1)
                == [.runAction(.init(requestId: 4, udfPath: "a:f"))])
        #expect(SyncSession.defaultMaxInflightActions == 10_000)
    }

    @Test func mutationResponseIsFollowedByATransitionAtItsTimestamp() {
        var session = connected()
        let r7 = session.receive(.mutation(.init(requestId: 0, udfPath: "m:f")), latestTs: ts1)
        #expect(r7 == [.runMutation(.init(requestId: 0, udfPath: "m:f"))])
        let response = ServerMessage.MutationResponse(requestId: 0, result: .success(.null), ts: ts2)
        let r8 = session.mutationCompleted(response)
        #expect(r8 == [.send(.mutationResponse(response)), .update])
        guard case .transition(let t)? = session.completeUpdate(evaluations: [:], readTables: [:], ts: ts2) else {
            Issue.record("a successful mutation needs a Transition"); return
        }
        #expect(t.endVersion.ts >= ts2)
        #expect(t.modifications.isEmpty)
        let r9 = session.completeUpdate(evaluations: [:], readTables: [:], ts: ts2)
        #expect(r9 == nil, "only one")
    }

    @Test func failedMutationAlsoGetsATransition() {
        var session = connected()
        let response = ServerMessage.MutationResponse(
            requestId: 0, result: .failure(message: "x", errorData: ["a": 1.0]), ts: nil)
        let r10 = session.mutationCompleted(response)
        #expect(r10 == [.send(.mutationResponse(response)), .update])
        let r11 = session.completeUpdate(evaluations: [:], readTables: [:], ts: ts1)
        #expect(r11 != nil)
    }
}
