import ConvexSyncProtocol
import Synchronization
import WSClient

/// One socket's outbound frames, written in the order the state machine produced them, without a writer task.
///
/// The client queues frames under its lock; after leaving it, the task that queued them writes them itself, unless
/// another task is already writing, in which case that task writes them too before it lets go. One writer at a time
/// keeps the wire order; a caller's mutation goes out from the caller's own task instead of waking another one.
/// Synchronous code hands the writing to a new task. The queue's lock is taken under the client's lock, never the
/// reverse.
final class OutboundQueue: Sendable {
    private struct State {
        var pending: [ClientMessage] = []
        var writing = false
        /// The socket failed or ended: frames are dropped (the state machine resends what it must on reconnect).
        var ended = false
    }

    private let state = Mutex(State())
    private let endSignal = WakeSignal()
    private let writer: WebSocketOutboundWriter
    private let writeFailed: @Sendable (any Error) -> Void

    init(writer: WebSocketOutboundWriter, writeFailed: @escaping @Sendable (any Error) -> Void) {
        self.writer = writer
        self.writeFailed = writeFailed
    }

    /// Queues frames; called under the client's lock, so the queue order is the state machine's order.
    func enqueue(_ messages: [ClientMessage]) {
        state.withLock { state in
            guard !state.ended else { return }
            state.pending.append(contentsOf: messages)
        }
    }

    /// Writes the queued frames from this task, unless another task is writing (it will write them).
    func flush() async {
        guard let batch = claim() else { return }
        await write(batch)
    }

    /// ``flush()`` for synchronous code: a new task writes, unless another task is writing.
    func flushDetached() {
        guard let batch = claim() else { return }
        Task { await self.write(batch) }
    }

    /// No more frames: drops what is queued and lets ``ended()`` return.
    func end() {
        state.withLock { state in
            state.ended = true
            state.writing = false
            state.pending = []
        }
        endSignal.signal()
    }

    /// Returns once ``end()`` was called (now or earlier), a write failed, or the task is cancelled.
    func ended() async {
        await endSignal.wait(timeout: nil)
    }

    /// Takes the writer role and the queued frames; `nil` if another task has the role or nothing is queued.
    private func claim() -> [ClientMessage]? {
        state.withLock { state in
            guard !state.writing, !state.ended, !state.pending.isEmpty else { return nil }
            state.writing = true
            defer { state.pending = [] }
            return state.pending
        }
    }

    /// For the writer: the frames queued meanwhile, or `nil` after giving up the role when there are none.
    private func next() -> [ClientMessage]? {
        state.withLock { state in
            guard !state.ended, !state.pending.isEmpty else {
                state.writing = false
                return nil
            }
            defer { state.pending = [] }
            return state.pending
        }
    }

    private func write(_ first: [ClientMessage]) async {
        var batch = first[...]
        while true {
            while let message = batch.first {
                do {
                    try await writer.write(.text(message.jsonText))
                    batch = batch.dropFirst()
                } catch is CancellationError where Task.isCancelled {
                    // This task (a cancelled caller) did not get the frame out; a new task keeps the role and
                    // writes it and the rest, in order.
                    let rest = Array(batch)
                    Task { await self.write(rest) }
                    return
                } catch {
                    end()
                    writeFailed(error)
                    return
                }
            }
            guard let more = next() else { return }
            batch = more[...]
        }
    }
}
