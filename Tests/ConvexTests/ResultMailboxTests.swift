import ConvexValues
import Synchronization
import Testing

@testable import Convex

@Suite(.timeLimit(.minutes(5)))
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
        let executor = ManualTaskExecutor()
        let consumer = Task(executorPreference: executor) { await mailbox.next() }
        executor.runUntilIdle()  // the consumer now waits in the mailbox
        mailbox.deliver(.success("x"))
        executor.runUntilIdle()
        #expect(try await consumer.value?.get() == "x")
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
        let executor = ManualTaskExecutor()
        let consumer = Task(executorPreference: executor) { await mailbox.next() }
        executor.runUntilIdle()  // the consumer now waits in the mailbox
        consumer.cancel()
        executor.runUntilIdle()
        #expect(await consumer.value == nil)
    }
}

/// Runs its tasks only when told: once ``runUntilIdle()`` returns, each of them has finished or waits for something
/// outside it, so a test knows a consumer is waiting without sleeping to give it time.
private final class ManualTaskExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// Runs the queued jobs, and the jobs they queue, until none is left.
    func runUntilIdle() {
        while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
