// Prints how many threads Swift's cooperative pool runs at once in this process's CPU set: 16 tasks each hold their
// thread for 200 ms (a deliberate blocking sleep, the very thing the project's code must never do), and the most that
// run together is the pool's width. Built and run by Benchmarks/run-gateway.sh one-core.
import Foundation
import Synchronization

let running = Mutex((now: 0, most: 0))
await withTaskGroup(of: Void.self) { group in
    for _ in 0..<16 {
        group.addTask {
            running.withLock { state in
                state.now += 1
                state.most = max(state.most, state.now)
            }
            usleep(200_000)
            running.withLock { $0.now -= 1 }
        }
    }
}
print(running.withLock { $0.most })
