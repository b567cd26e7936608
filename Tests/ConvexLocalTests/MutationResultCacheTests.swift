import Clocks
import ConvexSyncProtocol
import ConvexValues
import Foundation
import Synchronization
import Testing
import TimeSource

@testable import ConvexLocal

/// The record of sessions' mutation results as a plain value (``MutationResults``: who a result answers, its byte
/// bounds, the protection of recent results) and under its lock (``MutationResultCache``).
@Suite struct MutationResultCacheTests {
    /// A result of 1,000,000 bytes: a string's Convex JSON.
    static let megabyte = ConvexValue.string(String(repeating: "x", count: 999_998)).convexJSON()

    func holder(_ session: String, _ caller: InertIdentity = .unauthenticated) -> MutationResults.Holder {
        MutationResults.Holder(sessionId: session, caller: caller)
    }

    func call(_ path: String = "echo:echoMutation", _ args: ConvexValue = [:]) -> MutationResults.Call {
        MutationResults.Call(path: path, args: args.convexJSON())
    }

    func record(_ value: [UInt8] = ConvexValue.int64(1).convexJSON()) -> MutationResults.Record {
        MutationResults.Record(value: value, ts: ConvexTimestamp(nanoseconds: 7), logLines: [])
    }

    @Test func defaultsAreDocumented() {
        let limits = MutationResults.Limits()
        #expect(limits.totalBytes == 64 << 20)
        #expect(limits.bytesPerHolder == 4 << 20)
        #expect(limits.protectedFor == .seconds(60))
    }

    @Test func anEntryCountsItsResultArgumentsAndKeyAndASessionItsOverhead() {
        var results = MutationResults()
        let args: ConvexValue = ["text": "hello"]
        let value = ConvexValue.string("a result").convexJSON()
        let stored = MutationResults.Record(value: value, ts: nil, logLines: ["[LOG] 'one'"])
        let recorded = results.store(holder("s"), requestId: 1, call: call("m:f", args), record: stored, now: .zero)
        #expect(recorded)
        let expected =
            value.count + args.convexJSON().count + "m:f".utf8.count + "[LOG] 'one'".utf8.count + "s".utf8.count + 1
            + MutationResults.entryOverhead
        #expect(results.bytes == expected + MutationResults.holderOverhead)
        #expect(results.bytes(of: holder("s")) == expected + MutationResults.holderOverhead)
        results.store(holder("s"), requestId: 2, call: call("m:f", args), record: stored, now: .zero)
        #expect(results.bytes == 2 * expected + MutationResults.holderOverhead, "one overhead per session")
    }

    @Test func aResendGetsTheResultItRecorded() throws {
        var results = MutationResults()
        let response = ServerMessage.MutationResponse(
            requestId: 3, result: .success(["n": .int64(42), "b": .bytes(Data([1, 2]))]),
            ts: ConvexTimestamp(nanoseconds: 9),
            logLines: ["[LOG] 'x'"])
        let recorded = try #require(MutationResults.Record(response))
        results.store(holder("s"), requestId: 3, call: call(), record: recorded, now: .zero)
        #expect(results.lookup(holder("s"), requestId: 3, call: call()) == response)
    }

    @Test func failedMutationsAreNotRecorded() {
        let failed = ServerMessage.MutationResponse(
            requestId: 1, result: .failure(message: "boom", errorData: nil), ts: nil)
        #expect(MutationResults.Record(failed) == nil, "a failure committed nothing: its resend runs again")
    }

    /// A socket presenting a session's id as another caller, or a resend naming another function or other arguments,
    /// never gets the recorded result; the first record stands.
    @Test func aResultAnswersOnlyTheSameSessionCallerPathAndArguments() {
        var results = MutationResults()
        let original = call("conformance:increment", ["name": "a"])
        results.store(holder("s"), requestId: 1, call: original, record: record(), now: .zero)
        #expect(results.lookup(holder("s"), requestId: 1, call: original) != nil)
        #expect(results.lookup(holder("other"), requestId: 1, call: original) == nil)
        #expect(results.lookup(holder("s", .user(tokenIdentifier: "iss|u")), requestId: 1, call: original) == nil)
        #expect(results.lookup(holder("s", .admin(actingAs: nil)), requestId: 1, call: original) == nil)
        #expect(results.lookup(holder("s"), requestId: 1, call: call("conformance:other", ["name": "a"])) == nil)
        #expect(results.lookup(holder("s"), requestId: 1, call: call("conformance:increment", ["name": "b"])) == nil)
        #expect(results.lookup(holder("s"), requestId: 2, call: original) == nil)

        let other = call("conformance:increment", ["name": "b"])
        let replaced = results.store(holder("s"), requestId: 1, call: other, record: record(), now: .zero)
        #expect(!replaced)
        #expect(results.lookup(holder("s"), requestId: 1, call: original) != nil, "the first record stands")
        #expect(results.count == 1)
    }

    @Test func aRefreshedTokenOfTheSameUserIsTheSameCaller() {
        let claims: [String: ConvexValue] = ["iss": "https://issuer", "sub": "u1", "exp": 100.0]
        let first = UserIdentity(claims: claims)
        var refreshed = claims
        refreshed["exp"] = 200.0
        #expect(InertIdentity(.user(first)) == InertIdentity(.user(UserIdentity(claims: refreshed))))
        #expect(InertIdentity(.user(first)) != InertIdentity(.admin(actingAs: first)))
        #expect(InertIdentity(.unauthenticated) != InertIdentity(.admin(actingAs: nil)))
    }

    /// 400 one-MB results of one session leave that session's share, not 400 MB.
    @Test func oneSessionKeepsAtMostItsShareInBytes() {
        var results = MutationResults()
        for id in 0..<400 {
            results.store(holder("big"), requestId: UInt32(id), call: call(), record: record(Self.megabyte), now: .zero)
        }
        #expect(results.bytes(of: holder("big")) <= results.limits.bytesPerHolder)
        #expect(results.bytes <= results.limits.bytesPerHolder)
        #expect(results.count == 4, "the newest four fit in 4 MiB")
        #expect(results.lookup(holder("big"), requestId: 399, call: call()) != nil)
        #expect(results.lookup(holder("big"), requestId: 0, call: call()) == nil)
    }

    @Test func aResultLargerThanTheShareIsNotRecorded() {
        var results = MutationResults(limits: .init(totalBytes: 1 << 20, bytesPerHolder: 64 << 10))
        let recorded = results.store(holder("s"), requestId: 1, call: call(), record: record(Self.megabyte), now: .zero)
        #expect(!recorded)
        #expect(results.bytes == 0 && results.count == 0)
    }

    /// 400 one-MB results of 400 sessions stay under the total; the recent results already held are not evicted by the
    /// newcomers (they go unrecorded), and once the held ones are past the protection window they are evicted, oldest
    /// first.
    @Test func allSessionsTogetherStayUnderTheTotal() {
        var results = MutationResults()
        for id in 0..<400 {
            results.store(holder("s\(id)"), requestId: 1, call: call(), record: record(Self.megabyte), now: .seconds(1))
        }
        #expect(results.bytes <= results.limits.totalBytes)
        #expect(results.count == 67, "67 one-MB results fit in 64 MiB")
        #expect(results.lookup(holder("s0"), requestId: 1, call: call()) != nil)
        #expect(results.lookup(holder("s66"), requestId: 1, call: call()) != nil)
        #expect(results.lookup(holder("s67"), requestId: 1, call: call()) == nil)

        let later = Duration.seconds(1) + results.limits.protectedFor
        let recorded = results.store(
            holder("late"), requestId: 1, call: call(), record: record(Self.megabyte), now: later)
        #expect(recorded)
        #expect(results.lookup(holder("late"), requestId: 1, call: call()) != nil)
        #expect(results.lookup(holder("s0"), requestId: 1, call: call()) == nil, "the oldest went")
        #expect(results.lookup(holder("s1"), requestId: 1, call: call()) != nil)
        #expect(results.bytes <= results.limits.totalBytes)
    }

    /// Over the total with only recent results held, a session makes room from its own results; one that holds none
    /// goes unrecorded rather than evict another's recent result.
    @Test func overTheTotalASessionMakesRoomFromItsOwnResults() {
        var results = MutationResults(limits: .init(totalBytes: 3 * 101_000, bytesPerHolder: 3 * 101_000))
        let tenth = ConvexValue.string(String(repeating: "y", count: 99_998)).convexJSON()
        results.store(holder("other"), requestId: 1, call: call(), record: record(tenth), now: .zero)
        results.store(holder("me"), requestId: 1, call: call(), record: record(tenth), now: .zero)
        results.store(holder("me"), requestId: 2, call: call(), record: record(tenth), now: .zero)
        #expect(results.count == 3)
        let recorded = results.store(holder("me"), requestId: 3, call: call(), record: record(tenth), now: .seconds(1))
        #expect(recorded)
        #expect(results.lookup(holder("other"), requestId: 1, call: call()) != nil)
        #expect(results.lookup(holder("me"), requestId: 1, call: call()) == nil)
        #expect(results.lookup(holder("me"), requestId: 3, call: call()) != nil)
        let thirdRecorded = results.store(
            holder("third"), requestId: 1, call: call(), record: record(tenth), now: .seconds(2))
        #expect(!thirdRecorded)
        #expect(results.count == 3 && results.bytes <= results.limits.totalBytes)
    }

    /// The flood of the issue: 65,536 mutations of one session, and after them another session's result is still
    /// there; so is it after a flood of 65,536 sessions of one mutation each, while it is recent.
    @Test func floodsDoNotEvictAnotherSessionsRecentResult() {
        var results = MutationResults()
        let victim = call("conformance:increment", ["name": "victim"])
        results.store(holder("victim"), requestId: 1, call: victim, record: record(), now: .zero)
        for id in 0..<65_536 {
            let args: ConvexValue = ["n": .float64(Double(id))]
            results.store(
                holder("flood"), requestId: UInt32(id), call: call("echo:echoMutation", args), record: record(),
                now: .milliseconds(id))
        }
        #expect(results.lookup(holder("victim"), requestId: 1, call: victim) != nil)
        #expect(results.bytes(of: holder("flood")) <= results.limits.bytesPerHolder)

        var small = MutationResults(limits: .init(totalBytes: 64 << 10, bytesPerHolder: 4 << 10))
        small.store(holder("victim"), requestId: 1, call: victim, record: record(), now: .zero)
        for id in 0..<65_536 {
            small.store(holder("flood\(id)"), requestId: 1, call: call(), record: record(), now: .seconds(59))
        }
        #expect(small.lookup(holder("victim"), requestId: 1, call: victim) != nil)
        #expect(small.bytes <= small.limits.totalBytes)
    }

    /// Under its lock: a session's resend runs nothing; a failure, another caller or other arguments run again.
    @Test func theCacheRunsAResendOnce() {
        let cache = MutationResultCache(clock: ElapsedClock(TestClock()))
        let runs = Mutex(0)
        func run(
            _ request: ClientMessage.FunctionRequest, as caller: CallerIdentity = .unauthenticated,
            failing: Bool = false
        )
            -> ServerMessage.MutationResponse
        {
            cache.runOnce(sessionId: "s", caller: caller, request: request) {
                let n = runs.withLock {
                    $0 += 1
                    return $0
                }
                return ServerMessage.MutationResponse(
                    requestId: request.requestId,
                    result: failing ? .failure(message: "no", errorData: nil) : .success(.int64(Int64(n))),
                    ts: failing ? nil : ConvexTimestamp(nanoseconds: UInt64(n)))
            }
        }
        let request = ClientMessage.FunctionRequest(requestId: 1, udfPath: "m:f", args: ["a": 1.0])
        let first = run(request)
        #expect(run(request) == first)
        #expect(run(ClientMessage.FunctionRequest(requestId: 1, udfPath: "m.js:f", args: ["a": 1.0])) == first)
        #expect(runs.withLock { $0 } == 1)
        _ = run(request, as: .admin(actingAs: nil))
        _ = run(ClientMessage.FunctionRequest(requestId: 1, udfPath: "m:f", args: ["a": 2.0]))
        #expect(runs.withLock { $0 } == 3)
        let failing = ClientMessage.FunctionRequest(requestId: 2, udfPath: "m:f")
        _ = run(failing, failing: true)
        _ = run(failing, failing: true)
        #expect(runs.withLock { $0 } == 5)
    }
}
