// ThreadSanitizer and Swift's reference counts (scripts/sanitize-thread.supp, the swift-nio rule): thread B reads a
// field of a shared object and drops its reference; the main thread waits until it holds the only reference
// (`isKnownUniquelyReferenced`, as swift-nio's pooled receive buffers do before reusing a buffer) and then writes the
// field. That order is guaranteed (B's release comes before the check sees one reference), yet ThreadSanitizer
// reports B's read against the write: it does not see the ordering of a release and a uniqueness check.
// Run: swiftc -sanitize=thread -g unique-reference.swift -o /tmp/unique && /tmp/unique
import Foundation

final class Storage { var bytes = 0 }
final class Box: @unchecked Sendable { var storage: Storage? }

var owner = Storage()
let box = Box()
box.storage = owner
let b = Thread {
    let storage = box.storage!
    box.storage = nil
    print("B read", storage.bytes)
}
b.start()
while !isKnownUniquelyReferenced(&owner) { usleep(100) }
owner.bytes = 1
print("written", owner.bytes)
