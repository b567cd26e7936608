import Synchronization

/// Places of one kind (event streams, signed-in upstream connections, calls running) held per client, each client at
/// most `limit` of them at once, so that one client cannot take what a bound shared by everyone has to give. A place
/// is taken when a request is admitted and given back exactly once when it is over (or never starts).
package typealias ClientShares = Shares<ClientKey>

/// Places of one kind held per key (a client, an upstream connection), each key at most `limit` at once.
package final class Shares<Key: Hashable & Sendable>: Sendable {
    /// The most places one client may hold.
    package let limit: Int
    private let held = Mutex<[Key: Int]>([:])

    package init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a place for `client`; `false`, taking nothing, when it holds `limit` already.
    package func take(_ client: Key) -> Bool {
        held.withLock { held in
            let count = held[client, default: 0]
            guard count < limit else { return false }
            held[client] = count + 1
            return true
        }
    }

    /// Gives back a place `client` took.
    package func release(_ client: Key) {
        held.withLock { held in
            guard let count = held[client] else { return }
            held[client] = count > 1 ? count - 1 : nil
        }
    }

    /// The places `client` holds now.
    package func count(_ client: Key) -> Int {
        held.withLock { $0[client, default: 0] }
    }
}
