import Clocks
import ConvexLocal
import ConvexSyncProtocol
import ConvexValues
import Synchronization
import Testing
import TimeSource

/// One socket running many actions at once, as a gateway's socket does for all the anonymous callers it carries.
@Suite(.timeLimit(.minutes(5)))
struct ActionFloodTests {
    /// Holds every action that waits on it until it is opened.
    final class Gate: Sendable {
        private struct State {
            var open = false
            var waiters: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())

        func wait() async {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.open { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Observations made when the other action's answer arrives.
    struct AtTheAnswer {
        var otherResult: ServerMessage.FunctionResult?
        var slowAnswered = 0
    }

    /// 1,000 slow actions on one socket (each waits until the test opens a gate, which it does at the other's answer)
    /// and then one more: the other is answered while the thousand still run, and the socket stays open until every
    /// one of them is answered.
    @Test func thousandSlowActionsLeaveTheSocketOpenForAnother() async throws {
        let slow = 1000
        let gate = Gate()
        try await withLocalDeployment(
            .init(port: 0, clock: ElapsedClock(TestClock())), logger: SyncWebSocketTests.quietLogger
        ) { deployment in
            deployment.functions.action("flood:slow") { _, _ in
                await gate.wait()
                return .null
            }
            defer { gate.open() }
            let frames =
                [connectFrame()]
                + (1...slow).map {
                    ClientMessage.action(.init(requestId: UInt32($0), udfPath: "flood:slow")).jsonText
                }
                + [
                    ClientMessage.action(
                        .init(requestId: UInt32(slow + 1), udfPath: "echo:echoAction", args: ["from": "another"])
                    ).jsonText
                ]
            let seen = Mutex(AtTheAnswer())
            let result = try await syncExchange(deployment, send: frames) { messages in
                let answers = messages.compactMap { if case .actionResponse(let r) = $0 { r } else { nil } }
                if seen.withLock({ $0.otherResult == nil }),
                    let other = answers.first(where: { $0.requestId == UInt32(slow + 1) })
                {
                    seen.withLock {
                        $0.otherResult = other.result
                        $0.slowAnswered = answers.count - 1
                    }
                    gate.open()
                }
                return answers.count == slow + 1
            }
            let atTheAnswer = seen.withLock { $0 }
            #expect(atTheAnswer.otherResult == .success(["from": "another"]))
            // None had an answer (a refused one has it at once), and each succeeds once the gate opens: they were all
            // under way.
            #expect(atTheAnswer.slowAnswered == 0, "none of them had finished")
            let answers = result.messages.compactMap { if case .actionResponse(let r) = $0 { r } else { nil } }
            #expect(answers.count == slow + 1, "the socket stayed open: \(String(describing: result.closeReason))")
            #expect(answers.allSatisfy { if case .success = $0.result { true } else { false } })
        }
    }
}
