import NIOCore

/// Runs a task's jobs on one NIO event loop.
///
/// The socket's task prefers it, so the reader runs on the loop that reads the frames: a frame reaches the state
/// machine (and the caller or subscriber waiting for it is resumed) without first waking a thread of the global
/// executor for the reader.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
