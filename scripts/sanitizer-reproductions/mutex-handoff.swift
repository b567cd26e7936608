// ThreadSanitizer and an object handed from one thread to another through a `Synchronization.Mutex` (docs/testing.md,
// "Sanitizers"; MicroHTTPD's Exchange, `withMachine`). A thread makes a `Writer` (a class holding a Mutex of its own)
// and stores it in a slot under the slot's Mutex; another thread takes it out under that Mutex and then locks the
// writer's own Mutex, outside the slot's lock. The program is correct: the slot's lock orders the store before the
// take. Yet when the slot's lock is contended, the standard library hands it over in the kernel (a priority-inheriting
// futex) and ThreadSanitizer sees no order, so it reports the writer's Mutex being made ("Previous write … Writer.init")
// against the other thread locking it ("Atomic write …"), the shape a CI run reported for HTTPStreamWriter's Mutex.
// No frame of a `withLock` closure is on either side, so the suppressions do not match it. With `-D ANNOTATED` each
// holder of the slot's lock tells the sanitizer it acquires the slot after the holder before released it
// (`__tsan_acquire` after locking, `__tsan_release` before unlocking), as Exchange does, and the report goes away.
// Run from this folder (the suppressions hide the reports inside the slot's closures, which
// scripts/sanitize-thread.supp explains):
//   swiftc -sanitize=thread -g mutex-handoff.swift -o /tmp/mutex-handoff
//   TSAN_OPTIONS=suppressions=$PWD/../sanitize-thread.supp /tmp/mutex-handoff 20000
// A run of 20,000 handoffs gets the report (ThreadSanitizer reports one pair of lines once); with
// `-D ANNOTATED`, none in two runs.
import Foundation
import Synchronization

final class Writer: Sendable {
    let state = Mutex(0)
}

final class Slot: Sendable {
    let held = Mutex<Writer?>(nil)

    /// Runs `body` on the slot under its lock; with ANNOTATED, as an acquire and a release the sanitizer sees.
    func withHeld<R: Sendable>(_ body: (inout Writer?) -> R) -> R {
        held.withLock { held in
            #if ANNOTATED
            let address = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
            tsanAcquire(address)
            defer { tsanRelease(address) }
            #endif
            return body(&held)
        }
    }
}

@_silgen_name("__tsan_acquire") func tsanAcquire(_ address: UnsafeMutableRawPointer)
@_silgen_name("__tsan_release") func tsanRelease(_ address: UnsafeMutableRawPointer)

let slot = Slot()
let rounds = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 200_000
let done = DispatchSemaphore(value: 0)

let producer = Thread {
    for _ in 0..<rounds {
        let writer = Writer()  // its Mutex is made on this thread
        var stored = false
        while !stored {
            stored = slot.withHeld { held in
                guard held == nil else { return false }
                held = writer
                return true
            }
        }
    }
    done.signal()
}

let consumer = Thread {
    var total = 0
    for _ in 0..<rounds {
        var taken: Writer?
        while taken == nil {
            taken = slot.withHeld { held in
                defer { held = nil }
                return held
            }
        }
        // Locked on this thread, outside the slot's lock.
        total += taken!.state.withLock { value in
            value += 1
            return value
        }
    }
    print("handoffs", rounds, "total", total)
    done.signal()
}

producer.start()
consumer.start()
done.wait()
done.wait()
