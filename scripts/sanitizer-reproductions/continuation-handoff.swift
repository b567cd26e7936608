// ThreadSanitizer and a continuation resumed from another thread (scripts/sanitize-thread.supp, the WebSocket frame
// rule). NIO hands each decoded WebSocket frame to the task that waits for it the same way: the task stores its
// continuation under a lock and suspends; the event loop makes the frame, takes the continuation under the lock, lets
// the lock go and resumes the continuation with the frame. Here a plain thread makes a `Frame` and resumes the task's
// continuation with it; the task reads the frame. The program is correct (the runtime orders the resume before the
// task goes on), yet ThreadSanitizer sometimes reports the frame's initialiser against the task's read: the order the
// runtime gives is not always one the tool sees. The lock does not help: its last edge runs from the task to the
// thread, not back. A run of 1,000,000 handoffs (about 70 s) gets the report ("Previous write … Frame.init", "Read …
// handoff.swift") in each of four tries; 200,000 handoffs in about one try of three.
// Run: swiftc -sanitize=thread -g continuation-handoff.swift -o /tmp/handoff && /tmp/handoff 1000000
import Foundation

final class Frame {
    var data: [UInt8]
    init(_ n: Int) { data = [UInt8](repeating: UInt8(n & 0xff), count: 16) }
}

final class Slot: @unchecked Sendable {
    let lock = NSLock()
    var waiting: UnsafeContinuation<Frame, Never>?
}

let slot = Slot()
let rounds = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000

let producer = Thread {
    for n in 0..<rounds {
        let frame = Frame(n)  // made on this thread
        var continuation: UnsafeContinuation<Frame, Never>?
        while continuation == nil {
            slot.lock.lock()
            continuation = slot.waiting
            slot.waiting = nil
            slot.lock.unlock()
        }
        continuation!.resume(returning: frame)
    }
}

let done = DispatchSemaphore(value: 0)
Task.detached {
    producer.start()
    var sum = 0
    for _ in 0..<rounds {
        let frame = await withUnsafeContinuation { (continuation: UnsafeContinuation<Frame, Never>) in
            slot.lock.lock()
            slot.waiting = continuation
            slot.lock.unlock()
        }
        sum &+= Int(frame.data[0])  // read on the concurrency pool
    }
    print("handoffs", rounds, "sum", sum)
    done.signal()
}
done.wait()
