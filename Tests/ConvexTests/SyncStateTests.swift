import ConvexSyncProtocol
import ConvexValues
import Foundation
import Testing

@testable import Convex

/// The sync state machine, driven by hand with no I/O.
@Suite struct SyncStateTests {
    static let session = "6f1c1f3e-0000-4000-8000-000000000001"

    func makeState() -> SyncState {
        SyncState(sessionId: Self.session, backoff: Backoff(initial: .milliseconds(100), maximum: .seconds(15)))
    }

    func connected(_ state: inout SyncState) -> [ClientMessage] {
        state.connectAttemptStarted()
        return state.connectionOpened().send
    }

    func ts(_ n: UInt64) -> ConvexTimestamp { ConvexTimestamp(nanoseconds: n) }

    func transition(
        from start: StateVersion, querySet: UInt32? = nil, identity: UInt32? = nil, ts end: UInt64,
        _ modifications: [ServerMessage.StateModification] = []
    ) -> ServerMessage {
        .transition(
            .init(
                startVersion: start,
                endVersion: StateVersion(
                    querySet: querySet ?? start.querySet, identity: identity ?? start.identity,
                    ts: ts(end)),
                modifications: modifications))
    }

    let sub1 = SubscriberID(raw: 1)
    let sub2 = SubscriberID(raw: 2)

    @Test func firstConnectSendsConnectOnlyWhenNothingIsPending() {
        var state = makeState()
        #expect(state.phase == .idle)
        let messages = connected(&state)
        #expect(
            messages == [
                .connect(
                    .init(
                        sessionId: Self.session, connectionCount: 0,
                        lastCloseReason: "InitialConnect", maxObservedTimestamp: nil, clientTs: 0))
            ])
        #expect(state.connectionState == .connected)
    }

    @Test func subscribeWhileIdleAsksForAConnectionAndReplaysOnOpen() {
        var state = makeState()
        let effects = state.subscribe(sub1, udfPath: "messages:list", args: ["channel": "a"])
        #expect(effects.startConnection)
        #expect(effects.send.isEmpty)
        let messages = connected(&state)
        #expect(messages.count == 2)
        #expect(
            messages[1]
                == .modifyQuerySet(
                    .init(
                        baseVersion: 0, newVersion: 1,
                        modifications: [
                            .add(.init(queryId: 0, udfPath: "messages:list", args: ["channel": "a"]))
                        ])))
    }

    @Test func identicalSubscriptionsShareOneQueryAndTheLastOneRemovesIt() {
        var state = makeState()
        _ = connected(&state)
        let first = state.subscribe(sub1, udfPath: "messages:list", args: ["n": 1.0])
        #expect(first.send.count == 1)
        // `messages.js:list` is the same function.
        let second = state.subscribe(sub2, udfPath: "messages.js:list", args: ["n": 1.0])
        #expect(second.send.isEmpty)
        #expect(state.queries.count == 1)
        #expect(state.unsubscribe(sub1).send.isEmpty)
        let last = state.unsubscribe(sub2)
        #expect(
            last.send == [.modifyQuerySet(.init(baseVersion: 1, newVersion: 2, modifications: [.remove(queryId: 0)]))])
        #expect(state.queries.isEmpty)
    }

    @Test func differentArgumentsAreDifferentQueries() {
        var state = makeState()
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "m:f", args: ["n": 1.0])
        _ = state.subscribe(sub2, udfPath: "m:f", args: ["n": .int64(1)])
        #expect(state.queries.count == 2)
    }

    @Test func transitionsDeliverChangedResultsOnly() throws {
        var state = makeState()
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "m:f", args: [:])
        let e1 = state.receive(
            transition(
                from: .initial, querySet: 1, ts: 10,
                [
                    .queryUpdated(queryId: 0, value: "a", logLines: [], journal: nil)
                ]))
        #expect(e1.resetConnection == nil)
        #expect(e1.deliveries.map(\.0) == [sub1])
        #expect(try e1.deliveries.first?.1.get() == "a")
        // A second subscriber gets the cached value at once.
        let e2 = state.subscribe(sub2, udfPath: "m:f", args: [:])
        #expect(e2.deliveries.count == 1)
        let v1 = StateVersion(querySet: 1, identity: 0, ts: ts(10))
        let same = state.receive(
            transition(from: v1, ts: 11, [.queryUpdated(queryId: 0, value: "a", logLines: [], journal: nil)]))
        #expect(same.deliveries.isEmpty)
        let v2 = StateVersion(querySet: 1, identity: 0, ts: ts(11))
        let changed = state.receive(
            transition(from: v2, ts: 12, [.queryUpdated(queryId: 0, value: "b", logLines: [], journal: nil)]))
        #expect(changed.deliveries.map(\.0) == [sub1, sub2])
    }

    @Test func queryFailedBecomesATypedErrorForThatQueryOnly() throws {
        var state = makeState()
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "m:bad", args: [:])
        _ = state.subscribe(sub2, udfPath: "m:good", args: [:])
        let effects = state.receive(
            transition(
                from: .initial, querySet: 2, ts: 5,
                [
                    .queryFailed(
                        queryId: 0, errorMessage: "Uncaught ConvexError: nope", logLines: ["x"], journal: nil,
                        errorData: ["code": "NOPE"]),
                    .queryUpdated(queryId: 1, value: 1.0, logLines: [], journal: nil),
                ]))
        #expect(effects.resetConnection == nil)
        let byID = Dictionary(uniqueKeysWithValues: effects.deliveries.map { ($0.0, $0.1) })
        guard case .failure(let error)? = byID[sub1] else {
            Issue.record("expected a failure for the failing query")
            return
        }
        #expect(error.code == .convexError)
        #expect(error.data == ["code": "NOPE"])
        #expect(error.logLines == ["x"])
        #expect(try byID[sub2]?.get() == 1.0)
    }

    @Test(arguments: [
        (
            "Could not find public function for 'm:nope'. Did you forget to run `npx convex dev`?",
            ConvexClientError.Code.unknownFunction
        ),
        ("ArgumentValidationError: Object is missing the required field `body`.", .invalidArguments),
        ("Uncaught Error: boom", .functionFailed),
        (
            "[Request ID: 0123456789abcdef] Server Error\nCould not find public function for 'm:x'. Did you forget",
            .unknownFunction
        ),
        (
            "[Request ID: 0123456789abcdef] Server Error\nArgumentValidationError: Value does not match validator.",
            .invalidArguments
        ),
        (
            "[Request ID: 0123456789abcdef] Server Error\nTrying to execute m:f as query, but it is defined as mutation.",
            .unknownFunction
        ),
        (
            "[Request ID: 0123456789abcdef] Server Error\nUncaught Error: ArgumentValidationError: in user text",
            .functionFailed
        ),
    ])
    func serverErrorMessagesAreClassified(message: String, code: ConvexClientError.Code) {
        let error = ConvexClientError.functionFailure(
            message: message, errorData: nil, logLines: [], functionPath: "m:f")
        #expect(error.code == code)
        #expect(error.message == message)
    }

    @Test func wrongStartVersionResetsTheConnection() {
        var state = makeState()
        _ = connected(&state)
        let effects = state.receive(transition(from: StateVersion(querySet: 0, identity: 0, ts: ts(1000)), ts: 1000))
        #expect(effects.resetConnection == "StartVersionMismatch")
    }

    @Test func transitionToAQuerySetVersionNeverSentResets() {
        var state = makeState()
        _ = connected(&state)
        let effects = state.receive(transition(from: .initial, querySet: 3, ts: 1))
        #expect(effects.resetConnection != nil)
    }

    @Test func timestampGoingBackwardsResets() {
        var state = makeState()
        _ = connected(&state)
        _ = state.receive(transition(from: .initial, ts: 50))
        let effects = state.receive(transition(from: StateVersion(querySet: 0, identity: 0, ts: ts(50)), ts: 40))
        #expect(effects.resetConnection != nil)
    }

    @Test func mutationCompletesOnlyAfterATransitionReachesItsCommit() throws {
        var state = makeState()
        _ = connected(&state)
        let (id, sent) = state.request(.mutation, udfPath: "messages:send", args: ["body": "hi"])
        #expect(sent.send == [.mutation(.init(requestId: id, udfPath: "messages:send", args: ["body": "hi"]))])
        let response = state.receive(.mutationResponse(.init(requestId: id, result: .success("ok"), ts: ts(10))))
        #expect(response.completions.isEmpty)
        // A Transition below the commit ts does not release it (the JS rule).
        let early = state.receive(transition(from: .initial, ts: 9))
        #expect(early.completions.isEmpty)
        let late = state.receive(transition(from: StateVersion(querySet: 0, identity: 0, ts: ts(9)), ts: 10))
        #expect(late.completions.count == 1)
        #expect(late.completions.first?.0 == id)
        #expect(try late.completions.first?.1.get() == "ok")
        #expect(late.commitTimestamps[id] == ts(10), "the caller learns the commit timestamp")
        #expect(state.maxObservedTimestamp == ts(10))
    }

    @Test func aCommitTheViewAlreadyIncludesCompletesWithItsTimestamp() {
        var state = makeState()
        _ = connected(&state)
        _ = state.receive(transition(from: .initial, ts: 20))
        let (id, _) = state.request(.mutation, udfPath: "messages:send", args: [:])
        let response = state.receive(.mutationResponse(.init(requestId: id, result: .success("ok"), ts: ts(15))))
        #expect(response.completions.map(\.0) == [id])
        #expect(response.commitTimestamps == [id: ts(15)])
    }

    @Test func refreshingTheViewSendsAnEmptyQuerySetChangeOnlyWhenConnected() {
        var state = makeState()
        #expect(state.refreshView().send.isEmpty, "nothing to send before a socket")
        _ = connected(&state)
        let effects = state.refreshView()
        #expect(effects.send == [.modifyQuerySet(.init(baseVersion: 0, newVersion: 1, modifications: []))])
        // The deployment answers with a Transition to its latest snapshot and the new query-set version.
        let moved = state.receive(transition(from: .initial, querySet: 1, ts: 30))
        #expect(moved.resetConnection == nil)
        #expect(moved.transition?.ts == ts(30))
        #expect(moved.transition?.changed.isEmpty == true)
    }

    @Test func mutationFailureCompletesAtOnce() {
        var state = makeState()
        _ = connected(&state)
        let (id, _) = state.request(.mutation, udfPath: "m:f", args: [:])
        let effects = state.receive(
            .mutationResponse(
                .init(
                    requestId: id, result: .failure(message: "bad", errorData: "data"), ts: nil)))
        guard case .failure(let error)? = effects.completions.first?.1 else {
            Issue.record("expected the mutation to fail")
            return
        }
        #expect(error.code == .convexError)
        #expect(error.data == "data")
        #expect(error.functionPath == "m:f")
    }

    @Test func responseOfTheWrongKindResets() {
        var state = makeState()
        _ = connected(&state)
        let (id, _) = state.request(.action, udfPath: "a:run", args: [:])
        let effects = state.receive(.mutationResponse(.init(requestId: id, result: .success(nil), ts: ts(1))))
        #expect(effects.resetConnection != nil)
    }

    @Test func reconnectReplaysQuerySetAndUnfinishedMutationsAndFailsInFlightActions() {
        var state = makeState()
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "messages:list", args: [:])
        let (mutation, _) = state.request(.mutation, udfPath: "messages:send", args: ["body": "x"])
        let (action, _) = state.request(.action, udfPath: "a:run", args: [:])
        let (closeEffects, delay) = state.connectionClosed(reason: "TestClose", jitter: 1)
        #expect(delay == .milliseconds(100))
        #expect(closeEffects.completions.count == 1)
        #expect(closeEffects.completions.first?.0 == action)
        if case .failure(let error)? = closeEffects.completions.first?.1 {
            #expect(error.code == .connectionLost)
        } else {
            Issue.record("the in-flight action must fail")
        }
        #expect(state.connectionState == .reconnecting(reason: "TestClose"))

        // Calls made while disconnected wait for the next socket.
        let (later, offline) = state.request(.mutation, udfPath: "messages:send", args: ["body": "y"])
        #expect(offline.send.isEmpty)

        let messages = connected(&state)
        #expect(
            messages == [
                .connect(
                    .init(
                        sessionId: Self.session, connectionCount: 1, lastCloseReason: "TestClose",
                        maxObservedTimestamp: nil, clientTs: 0)),
                .modifyQuerySet(
                    .init(
                        baseVersion: 0, newVersion: 1,
                        modifications: [
                            .add(.init(queryId: 0, udfPath: "messages:list", args: [:]))
                        ])),
                .mutation(.init(requestId: mutation, udfPath: "messages:send", args: ["body": "x"])),
                .mutation(.init(requestId: later, udfPath: "messages:send", args: ["body": "y"])),
            ])
    }

    @Test func completedMutationIsNotResentAndIsReleasedByTheNextSocketsTransition() {
        var state = makeState()
        _ = connected(&state)
        let (id, _) = state.request(.mutation, udfPath: "m:f", args: [:])
        _ = state.receive(.mutationResponse(.init(requestId: id, result: .success(1.0), ts: ts(20))))
        _ = state.connectionClosed(reason: "gone", jitter: 0)
        let messages = connected(&state)
        // Connect plus the (empty) query-set rebuild that makes the server send a Transition.
        #expect(messages.count == 2)
        #expect(!messages.contains { if case .mutation = $0 { true } else { false } })
        let effects = state.receive(transition(from: .initial, querySet: 1, ts: 25))
        #expect(effects.completions.map(\.0) == [id])
    }

    @Test func versionsRestartOnEverySocket() {
        var state = makeState()
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "m:f", args: [:])
        _ = state.receive(transition(from: .initial, querySet: 1, ts: 7))
        _ = state.connectionClosed(reason: "x", jitter: 0)
        _ = connected(&state)
        #expect(state.remoteVersion == .initial)
        // The new socket's first Transition starts at {0,0,0} again, and carries the old maxObservedTimestamp.
        let effects = state.receive(transition(from: .initial, querySet: 1, ts: 8))
        #expect(effects.resetConnection == nil)
        #expect(state.maxObservedTimestamp == ts(8))
    }

    @Test func reconnectSendsMaxObservedTimestamp() {
        var state = makeState()
        _ = connected(&state)
        _ = state.receive(transition(from: .initial, ts: 77))
        _ = state.connectionClosed(reason: "x", jitter: 0)
        let messages = connected(&state)
        guard case .connect(let connect)? = messages.first else {
            Issue.record("Connect must come first")
            return
        }
        #expect(connect.maxObservedTimestamp == ts(77))
        #expect(connect.sessionId == Self.session)
    }

    @Test func authenticationIsSentAfterConnectAndOnChange() {
        var state = makeState()
        _ = state.setAuth(.token(.user("jwt.a")), token: .user("jwt.a"))
        let messages = connected(&state)
        #expect(messages.count == 2)
        #expect(messages[1] == .authenticate(.init(baseVersion: 0, token: .user("jwt.a"))))
        let change = state.setAuth(.token(.admin("key", actingAs: nil)), token: .admin("key", actingAs: nil))
        #expect(change.send == [.authenticate(.init(baseVersion: 1, token: .admin("key", actingAs: nil)))])
        let clear = state.setAuth(.none, token: nil)
        #expect(clear.send == [.authenticate(.init(baseVersion: 2, token: .none))])
    }

    @Test func rejectedStaticTokenStopsReconnectingAndFailsCalls() {
        var state = makeState()
        _ = state.setAuth(.token(.user("bad")), token: .user("bad"))
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "m:f", args: [:])
        let (id, _) = state.request(.mutation, udfPath: "m:g", args: [:])
        let effects = state.receive(.authError(.init(error: "bad token", baseVersion: 0, authUpdateAttempted: true)))
        #expect(effects.resetConnection == "AuthError: bad token")
        let (closed, delay) = state.connectionClosed(reason: "AuthError: bad token", jitter: 0.5)
        #expect(delay == nil)
        #expect(state.connectionState == .authenticationFailed(message: "bad token"))
        #expect(closed.completions.map(\.0) == [id])
        #expect(closed.deliveries.map(\.0) == [sub1])
        if case .failure(let error)? = closed.deliveries.first?.1 {
            #expect(error.code == .authenticationFailed)
        }
        // New calls fail at once; new credentials resume.
        let (_, refused) = state.request(.mutation, udfPath: "m:g", args: [:])
        #expect(refused.completions.count == 1)
        let resumed = state.setAuth(.token(.user("good")), token: .user("good"))
        #expect(resumed.wakeConnectionLoop)
        #expect(state.phase == .waitingToReconnect)
    }

    @Test func providerGetsOneForcedRefreshThenStops() {
        var state = makeState()
        _ = state.setAuth(.provider, token: .user("old"))
        _ = connected(&state)
        let first = state.receive(.authError(.init(error: "expired", baseVersion: 0, authUpdateAttempted: false)))
        #expect(first.resetConnection != nil)
        #expect(state.forceTokenRefresh)
        let (_, delay) = state.connectionClosed(reason: "AuthError: expired", jitter: 0)
        #expect(delay != nil)
        state.providerTokenResolved(.user("still-bad"))
        _ = connected(&state)
        _ = state.receive(.authError(.init(error: "expired", baseVersion: 0, authUpdateAttempted: false)))
        let (_, again) = state.connectionClosed(reason: "AuthError: expired", jitter: 0)
        #expect(again == nil)
        #expect(state.connectionState == .authenticationFailed(message: "expired"))
    }

    /// An unsigned JWT with these times (the client only reads them).
    static func jwt(iat: Double?, exp: Double?, subject: String = "u") -> String {
        var claims = [#""sub":"\#(subject)""#]
        if let iat { claims.append(#""iat":\#(iat)"#) }
        if let exp { claims.append(#""exp":\#(exp)"#) }
        let payload = Data("{\(claims.joined(separator: ","))}".utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(
                of: "/", with: "_")
        return "eyJhbGciOiJSUzI1NiJ9.\(payload).c2ln"
    }

    @Test(arguments: [
        // An hour-long token: 10 s before exp, as convex-js.
        (iat: 1000.0, exp: 4600.0, now: 1000.0, expected: Duration.seconds(3590)),
        // A 3 s token: half its life ahead, so 1.5 s before exp.
        (iat: 1000.0, exp: 1003.0, now: 1000.0, expected: .milliseconds(1500)),
        (iat: 1000.0, exp: 1003.0, now: 1000.5, expected: .seconds(1)),
        // A 30 s token confirmed late: whatever is left minus 10 s.
        (iat: 1000.0, exp: 1030.0, now: 1015.0, expected: .seconds(5)),
        // Less than the lead is left: at once.
        (iat: 1000.0, exp: 1030.0, now: 1025.0, expected: .zero),
        // The local clock is off (past exp, or before iat): the whole lifetime from now.
        (iat: 1000.0, exp: 1030.0, now: 2000.0, expected: .seconds(20)),
        (iat: 1000.0, exp: 1030.0, now: 10.0, expected: .seconds(20)),
    ])
    func refreshDelayFollowsExpiry(iat: Double, exp: Double, now: Double, expected: Duration) {
        #expect(
            SyncState.tokenRefreshDelay(jwt: Self.jwt(iat: iat, exp: exp), now: now, leeway: .seconds(10)) == expected)
    }

    @Test func tokensThatCannotBeScheduledAreNotRefreshed() {
        for token in [
            Self.jwt(iat: nil, exp: 2000), Self.jwt(iat: 1000, exp: nil), Self.jwt(iat: 1000, exp: 1002),
            "not.a.jwt", "opaque",
        ] {
            #expect(SyncState.tokenRefreshDelay(jwt: token, now: 1000, leeway: .seconds(10)) == nil, "\(token)")
        }
    }

    /// The provider's token, once the deployment confirms it, is replaced on the same socket before it expires.
    @Test func confirmedProviderTokenIsRefreshedOnTheSameSocket() {
        var state = makeState()
        let first = Self.jwt(iat: 1000, exp: 1003)
        _ = state.setAuth(.provider, token: .user(first))
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "m:f", args: [:])
        // The Transition that includes identity 1 confirms the token.
        let confirmed = state.receive(
            transition(
                from: .initial, querySet: 1, identity: 1, ts: 5,
                [
                    .queryUpdated(queryId: 0, value: 1.0, logLines: [], journal: nil)
                ]))
        #expect(confirmed.tokenConfirmed)
        guard let plan = state.planTokenRefresh(now: 1000, leeway: .seconds(10)) else {
            Issue.record("no plan"); return
        }
        #expect(plan.delay == .milliseconds(1500))
        #expect(state.planTokenRefresh(now: 1000, leeway: .seconds(10)) == nil, "one plan per confirmed identity")
        let again = state.receive(transition(from: state.remoteVersion, ts: 6))
        #expect(!again.tokenConfirmed)

        #expect(state.tokenRefreshIsDue(generation: plan.generation))
        #expect(!state.tokenRefreshIsDue(generation: plan.generation - 1))
        let second = Self.jwt(iat: 1002, exp: 1005)
        let refreshed = state.tokenRefreshed(second, generation: plan.generation)
        #expect(refreshed.send == [.authenticate(.init(baseVersion: 1, token: .user(second)))])
        #expect(refreshed.resetConnection == nil && refreshed.deliveries.isEmpty)
        #expect(state.phase == .connected)
        // The server re-ran the query with the same result: no delivery, and the next refresh is planned.
        let next = state.receive(
            transition(
                from: state.remoteVersion, identity: 2, ts: 7,
                [
                    .queryUpdated(queryId: 0, value: 1.0, logLines: [], journal: nil)
                ]))
        #expect(next.tokenConfirmed && next.deliveries.isEmpty)
        #expect(state.planTokenRefresh(now: 1002, leeway: .seconds(10))?.delay == .milliseconds(1500))
    }

    @Test func refreshWithTheSameTokenSendsNothing() {
        var state = makeState()
        let token = Self.jwt(iat: 1000, exp: 1003)
        _ = state.setAuth(.provider, token: .user(token))
        _ = connected(&state)
        _ = state.receive(transition(from: .initial, identity: 1, ts: 5))
        guard let plan = state.planTokenRefresh(now: 1000, leeway: .seconds(10)) else {
            Issue.record("no plan"); return
        }
        #expect(state.tokenRefreshed(token, generation: plan.generation).send.isEmpty)
    }

    @Test func staleRefreshPlansDoNothing() {
        var state = makeState()
        _ = state.setAuth(.provider, token: .user(Self.jwt(iat: 1000, exp: 1003)))
        _ = connected(&state)
        _ = state.receive(transition(from: .initial, identity: 1, ts: 5))
        guard let plan = state.planTokenRefresh(now: 1000, leeway: .seconds(10)) else {
            Issue.record("no plan"); return
        }
        // The socket dropped: the next socket's confirmation plans anew.
        _ = state.connectionClosed(reason: "gone", jitter: 0)
        #expect(state.tokenRefreshed("x.y.z", generation: plan.generation).send.isEmpty)
        _ = connected(&state)
        _ = state.receive(transition(from: .initial, identity: 1, ts: 6))
        guard let replan = state.planTokenRefresh(now: 1000, leeway: .seconds(10)) else {
            Issue.record("no replan"); return
        }
        #expect(replan.generation != plan.generation)
        // New credentials also cancel the plan; static tokens are never refreshed.
        _ = state.setAuth(.token(.user("static")), token: .user("static"))
        #expect(!state.tokenRefreshIsDue(generation: replan.generation))
        let confirmedStatic = state.receive(transition(from: state.remoteVersion, identity: 2, ts: 7))
        #expect(!confirmedStatic.tokenConfirmed)
        #expect(state.planTokenRefresh(now: 1000, leeway: .seconds(10)) == nil)
    }

    @Test(arguments: [nil, "failed"] as [String?])
    func providerWithoutATokenEndsInAuthenticationFailed(failure: String?) {
        var state = makeState()
        _ = state.setAuth(.provider, token: .user(Self.jwt(iat: 1000, exp: 1003)))
        _ = connected(&state)
        _ = state.subscribe(sub1, udfPath: "m:f", args: [:])
        _ = state.receive(transition(from: .initial, querySet: 1, identity: 1, ts: 5))
        guard let plan = state.planTokenRefresh(now: 1000, leeway: .seconds(10)) else {
            Issue.record("no plan"); return
        }
        let effects =
            failure.map { state.tokenRefreshFailed($0, generation: plan.generation) }
            ?? state.tokenRefreshed(nil, generation: plan.generation)
        let message = failure ?? "Token provider returned no token"
        #expect(effects.resetConnection == message)
        let (closed, delay) = state.connectionClosed(reason: "Connection closed", jitter: 0)
        #expect(delay == nil)
        #expect(state.connectionState == .authenticationFailed(message: message))
        #expect(closed.deliveries.map(\.0) == [sub1])
    }

    @Test func fatalErrorAndChunksReset() {
        var state = makeState()
        _ = connected(&state)
        #expect(state.receive(.fatalError("boom")).resetConnection == "FatalError: boom")
        #expect(
            state.receive(.transitionChunk(.init(chunk: "", partNumber: 0, totalParts: 1, transitionId: "0")))
                .resetConnection != nil)
    }

    @Test func goodMessageResetsBackoff() {
        var state = makeState()
        _ = connected(&state)
        _ = state.connectionClosed(reason: "a", jitter: 1)
        _ = connected(&state)
        let (_, second) = state.connectionClosed(reason: "b", jitter: 1)
        #expect(second == .milliseconds(200))
        _ = connected(&state)
        _ = state.receive(.ping)
        let (_, afterGood) = state.connectionClosed(reason: "c", jitter: 1)
        #expect(afterGood == .milliseconds(100))
    }

    @Test func closeFailsEverythingPending() {
        var state = makeState()
        _ = connected(&state)
        let (id, _) = state.request(.mutation, udfPath: "m:f", args: [:])
        let effects = state.close()
        #expect(effects.completions.map(\.0) == [id])
        #expect(state.connectionState == .closed)
        let (_, after) = state.request(.action, udfPath: "a:b", args: [:])
        if case .failure(let error)? = after.completions.first?.1 {
            #expect(error.code == .clientClosed)
        } else {
            Issue.record("calls after close must fail")
        }
    }

    @Test func timeoutErrorSaysUnreachableWhileDisconnected() {
        var state = makeState()
        state.connectAttemptStarted()
        _ = state.connectionClosed(reason: "Connection refused", jitter: 0)
        let error = state.timeoutError(what: "query")
        #expect(error.code == .unreachable)
        #expect(error.message.contains("Connection refused"))
        _ = connected(&state)
        #expect(state.timeoutError(what: "query").code == .timeout)
    }
}

@Suite struct BackoffTests {
    @Test func doublesUpToTheCapWithFullJitter() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(15))
        var caps: [Duration] = []
        for _ in 0..<10 { caps.append(backoff.nextDelay(jitter: 1)) }
        #expect(caps.prefix(4) == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800)])
        #expect(caps.last == .seconds(15))
        #expect(backoff.nextDelay(jitter: 0) == .zero)
        #expect(backoff.nextDelay(jitter: 0.5) == .milliseconds(7500))
        backoff.reset()
        #expect(backoff.nextDelay(jitter: 1) == .milliseconds(100))
    }
}

@Suite struct DeploymentURLTests {
    @Test(arguments: [
        ("http://127.0.0.1:3210", "ws://127.0.0.1:3210/api/sync"),
        ("https://happy-animal-123.convex.cloud", "wss://happy-animal-123.convex.cloud/api/sync"),
        ("https://example.com/some/path?x=1", "wss://example.com/api/sync"),
        ("ws://localhost:8080/", "ws://localhost:8080/api/sync"),
    ])
    func rewritesToTheSyncEndpoint(input: String, expected: String) throws {
        #expect(try ConvexClient.syncURL(for: input) == expected)
    }

    @Test(arguments: ["ftp://example.com", "not a url", "http://", "/relative"])
    func rejectsBadURLs(input: String) {
        #expect(throws: ConvexClientError.self) { try ConvexClient.syncURL(for: input) }
    }
}
