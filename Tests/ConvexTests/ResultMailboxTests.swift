import ConvexValues
import Testing

@testable import Convex

@Suite(.timeLimit(.minutes(1)))
struct ResultMailboxTests {
    @Test func slowConsumerGetsOnlyTheNewestResult() async throws {
        let mailbox = ResultMailbox()
        mailbox.deliver(.success(1.0))
        mailbox.deliver(.success(2.0))
        mailbox.deliver(.success(3.0))
        #expect(try await mailbox.next()?.get() == 3.0)
    }

    @Test func waitingConsumerIsWokenByADelivery() async throws {
        let mailbox = ResultMailbox()
        async let next = mailbox.next()
        try await Task.sleep(for: .milliseconds(50))
        mailbox.deliver(.success("x"))
        #expect(try await next?.get() == "x")
    }

    @Test func finishEndsAfterThePendingResult() async throws {
        let mailbox = ResultMailbox()
        mailbox.deliver(.success(true))
        mailbox.finish()
        mailbox.deliver(.success(false))  // ignored after finish
        #expect(try await mailbox.next()?.get() == true)
        #expect(await mailbox.next() == nil)
    }

    @Test func cancellationEndsAWait() async {
        let mailbox = ResultMailbox()
        let task = Task { await mailbox.next() }
        try? await Task.sleep(for: .milliseconds(50))
        task.cancel()
        #expect(await task.value == nil)
    }
}
