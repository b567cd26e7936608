// ThreadSanitizer and `Synchronization.Mutex` on Linux (scripts/sanitize-thread.supp, the first two rules): two
// threads increment a counter under one Mutex. The total is right every time, yet ThreadSanitizer reports a race
// between the two `withLock` closures: it does not see the futex the Mutex takes inside the standard library.
// Run: swiftc -sanitize=thread -g mutex.swift -o /tmp/mutex && /tmp/mutex
// With `-D TYPED_THROWS` the closures throw a typed error, whose mangled name the second rule matches; with
// `-D TUPLE_VALUE` the Mutex holds a tuple, whose closures' mangled name the third rule matches.
import Foundation
import Synchronization

struct Refusal: Error {}
#if TUPLE_VALUE
let pair = Mutex((count: 0, other: 0))
func total() -> Int { pair.withLock { $0.count } }
#else
let counter = Mutex(0)
func total() -> Int { counter.withLock { $0 } }
#endif
let rounds = 100_000

func increment() {
    #if TYPED_THROWS
    try! counter.withLock { (value: inout Int) throws(Refusal) in value += 1 }
    #elseif TUPLE_VALUE
    pair.withLock { $0.count += 1 }
    #else
    counter.withLock { $0 += 1 }
    #endif
}

let other = Thread { for _ in 0..<rounds { increment() } }
other.start()
for _ in 0..<rounds { increment() }
while total() < 2 * rounds { usleep(1000) }
print("total", total())
